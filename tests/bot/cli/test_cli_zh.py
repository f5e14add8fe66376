"""The proposer's CLI in zh against a bot people decide on: `propose`, `show` (waiting, counted,
concluded), `list` with more to page, `cancel` (once, again, and refused), every output read
for English left but the operations' own names, ids and free text, the config's names, the
product's, and the flags a person types (tests/support/zh_sweep.py)."""

from __future__ import annotations

import json
from pathlib import Path

from store import OperationView
from tests.support.factories import (
    LARGE_ORDERS_RULE,
    TRIO_AUDIENCE,
    big_order,
    message_request,
    order_request,
)
from tests.support.processes import ENV, Result, cli
from tests.support.stack import DEV_TOKEN, Stack, StackFactory, settled
from tests.support.waiting import eventually
from tests.support.zh_sweep import config_words, english_left, operation_words, words_of

PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob", "ou_carol": "Carol"}
UTC_ENV = {**ENV, "TZ": "UTC"}
# flags a person types, and the API's code a script matches (an id)
TYPED = {"cursor", "not", "cancellable"}


async def run(stack: Stack, *args: str, stdin: bytes | None = None) -> Result:
    return await cli(
        *args,
        "--url",
        stack.bot_url,
        "--token",
        DEV_TOKEN,
        "--lang",
        "zh",
        env=UTC_ENV,
        stdin=stdin,
    )


async def allowed_words(stack: Stack, *ids: str) -> set[str]:
    found = config_words(PEOPLE, stack.config().settings.model_dump(mode="json")) | TYPED
    for each in ids:
        _, fresh = await stack.api("GET", f"/api/v1/operations/{each}")
        found |= operation_words(OperationView.model_validate(fresh))
    return found


async def test_every_cli_answer_reads_in_chinese(make_stack: StackFactory, tmp_path: Path) -> None:
    stack: Stack = await make_stack(
        "ws", people=PEOPLE, audiences=[TRIO_AUDIENCE], approval_rules=[LARGE_ORDERS_RULE]
    )
    said: dict[str, str] = {}

    big = {k: v for k, v in big_order("unused").items() if k != "request_id"}
    path = tmp_path / "big.json"
    path.write_text(json.dumps(big))
    proposed = await run(stack, "propose", str(path))
    assert proposed.code == 0, proposed.err
    said["proposed"], said["request id made"] = proposed.out, proposed.err
    again = await run(stack, "propose", str(path))
    said["proposed again"] = again.out
    big_id = proposed.out.splitlines()[1].split()[0]

    await eventually(lambda: stack.card_of(big_id) is not None, woken_by=stack.state)
    card = stack.card_of(big_id)
    assert card is not None
    said["waiting"] = (await run(stack, "show", big_id)).out
    await stack.click(card, "ou_alice")
    said["counted"] = (await run(stack, "show", big_id)).out
    await stack.click(card, "ou_bob")
    await settled(stack, big_id, "filled")
    said["concluded"] = (await run(stack, "show", big_id)).out
    refused = await run(stack, "cancel", big_id)
    assert refused.code == 1
    said["not cancellable"] = refused.err

    small = await stack.propose(order_request("zh-cli-cancelled"))
    cancelled = await run(stack, "cancel", small["id"])
    said["cancelled"] = cancelled.out
    said["cancelled again"] = (await run(stack, "cancel", small["id"])).out
    # a draft that supersedes an open one says so; a wait that runs out says where it stands
    first = await run(stack, "propose", "-", stdin=json.dumps(message_request("zh-1")).encode())
    said["draft"] = first.out
    newer = message_request("zh-2")
    newer["payload"]["text"] = "About invoice 7: please send it again."
    superseding = await run(stack, "propose", "-", stdin=json.dumps(newer).encode())
    said["superseding draft"] = superseding.out
    first_id, newer_id = (out.splitlines()[1].split()[0] for out in (first.out, superseding.out))
    waited = await run(stack, "show", newer_id, "--wait", "1")
    assert waited.code == 3, waited.err
    said["wait ran out"] = waited.err
    listed = await run(stack, "list", "--limit", "1")
    said["list"] = listed.out
    cursor = listed.out.splitlines()[-1].split()[-1]

    allowed = await allowed_words(stack, big_id, small["id"], first_id, newer_id)
    allowed |= words_of(cursor)
    left = {name: english_left(out, allowed) for name, out in said.items()}
    assert {name: words for name, words in left.items() if words} == {}, said
    # and they say what they must, in Chinese
    assert said["proposed"].startswith("已提交:\n"), said["proposed"]
    assert said["request id made"].startswith("请求 ID cli-"), said["request id made"]
    assert said["proposed again"].startswith("此前已提交（请求 ID 相同）:\n")
    assert "  审批: Alice, Bob, Carol 中的 2 位" in said["waiting"], said["waiting"]
    assert "  名义金额: 60,000.00 USDC" in said["waiting"], said["waiting"]
    assert "  已确认: Alice " in said["counted"], said["counted"]
    assert said["not cancellable"].startswith("错误：not_cancellable: 该操作"), refused.err
    assert said["cancelled"].startswith("已取消:\n"), said["cancelled"]
    assert said["cancelled again"].startswith("此前已取消（没有改变）:\n")
    header = said["list"].splitlines()[0].split()
    assert header == ["ID", "创建", "状态", "结果", "类型", "内容"], header
    assert said["list"].splitlines()[-1] == f"更多：--cursor {cursor}", said["list"]
    assert (
        said["superseding draft"]
        .splitlines()[-1]
        .startswith(f"{newer_id} 取代了同一目的地上未决的草稿 {first_id}：")
    ), said["superseding draft"]
    assert said["wait ran out"] == "1 秒内未结束：该操作待确认\n", said["wait ran out"]
