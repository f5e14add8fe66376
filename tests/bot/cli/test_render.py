"""The CLI's plain-text operation (`countersign show`, `list`): what the approval policy asks,
who confirmed, the decision with its reason, in the catalogue's words and people's names."""

from __future__ import annotations

from datetime import UTC, timedelta

from bot.api.people import with_people
from bot.cli.render import operation_table, operation_text, width
from kernel.timeutil import parse_iso_utc
from store import Approval, Audience, Claimed, Click, Counted, Decided, Store, operation_view
from tests.support.factories import offered

TRIO = Audience("ops", "oc_ops", ("ou_alice", "ou_bob", "ou_carol"))
LARGE = Approval(required=2, rule="large", threshold="50,000 USDC", notional="60000.00 USDC")
NAMES = {"ou_alice": "Alice", "ou_bob": "Bob"}  # Carol has no name: shown by her id


def click(op_id: str, digest: str, action: str, operator: str) -> Click:
    return Click(op_id, action, digest, operator, "oc_ops", None)


async def test_show_and_the_dashboard_say_what_is_needed_who_confirmed_and_why_it_was_rejected(
    store: Store,
) -> None:
    op = await offered(store, audience=TRIO, approval=LARGE)
    counted = await store.confirm_and_claim(click(op.id, op.confirm_digest, "confirm", "ou_alice"))
    assert isinstance(counted, Counted)
    waiting = with_people(operation_view(counted.operation), NAMES)
    expires = waiting.expires_at
    shown = operation_text(waiting, now=parse_iso_utc(expires) - timedelta(minutes=14), tz=UTC)
    first = shown.splitlines()[0]
    assert first == f"{op.id}  Order to confirm — 1 of 2 confirmed  SIMULATED"
    # amounts as the card shows them: grouped, to USDC's cents (the digested words unchanged)
    assert "  approval: 2 of Alice, Bob, ou_carol (above 50,000.00 USDC)" in shown
    assert "  notional: 60,000.00 USDC" in shown and waiting.approval.notional == "60000.00 USDC"
    assert "  confirmed by: Alice" in shown
    assert "  state:     awaiting confirmation" in shown
    assert f"  Expires at {expires[:10]} {expires[11:16]} UTC (in 14 min)" in shown

    vetoed = await store.reject(
        Click(op.id, "reject", op.confirm_digest, "ou_bob", "oc_ops", None, reason="Too big")
    )
    assert isinstance(vetoed, Decided)
    view = with_people(operation_view(vetoed.operation), NAMES)
    assert view.decision is not None and view.decision.at is not None
    decided_at = view.decision.at
    now = parse_iso_utc(decided_at) + timedelta(minutes=3)
    shown = operation_text(view, now=now, tz=UTC)
    assert shown.splitlines()[0] == f"{op.id}  Rejected by Bob: Too big  SIMULATED"
    at = f"{decided_at[:10]} {decided_at[11:16]} UTC"
    assert f"  Rejected by Bob at {at} (3 min ago), on the Lark card" in shown
    assert "  Reason: Too big" in shown
    assert "Expires" not in shown, "once decided the expiry is history"
    assert "awaiting_confirmation" not in shown and decided_at not in shown  # words, plain times


async def test_show_and_list_speak_chinese_with_the_same_catalogue(store: Store) -> None:
    op = await offered(store)
    confirmed = await store.confirm_and_claim(
        click(op.id, op.confirm_digest, "confirm", "ou_alice")
    )
    assert isinstance(confirmed, Claimed)
    view = with_people(operation_view(confirmed.operation), NAMES)
    now = parse_iso_utc(view.created_at) + timedelta(hours=2, minutes=5)
    shown = operation_text(view, now=now, lang="zh", tz=UTC)
    assert shown.splitlines()[0] == f"{op.id}  已确认 — 执行中  模拟"
    assert "由 Alice 于" in shown and "确认" in shown and "在飞书卡片上" in shown
    # a wide character takes two columns: the values line up with the English labels
    assert "  状态:      已确认" in shown and "  摘要:      " in shown

    header, row = operation_table([view], now=now, lang="zh")
    assert header.split() == ["ID", "创建", "状态", "结果", "类型", "内容"]
    assert row.startswith(f"{op.id}  2小时05分前  已确认")
    # wide characters take two columns, so the columns line up on a terminal
    assert width(row[: row.index("finance.order")]) == width(header[: header.index("类型")])
