"""A click's toast in zh, through the sandbox and the unmodified SDK.

Which language a toast is in: Lark's callback carries no locale of the clicking operator
(docs/lark-reference.md §1.2), so the bot cannot choose per person. Its `content` is in the
cards' language ([cards] lang), and its `i18n` holds every language, from which Lark's client
shows the operator's own (zh_cn to a zh client, en_us to an English one)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tests.support.factories import LARGE_ORDERS_RULE, TRIO_AUDIENCE, big_order, order_request
from tests.support.stack import Stack, StackFactory, button_value
from tests.support.zh_sweep import english_left

ZH = {"lang": "zh"}


def said(reply: dict[str, Any], kind: str) -> str:
    """The toast's content, checked: of `kind`, with the zh_cn version equal to it, and no
    English word left in it."""
    toast = reply["toast"]
    assert toast["type"] == kind, reply
    assert toast["i18n"]["zh_cn"] == toast["content"], toast
    assert english_left(toast["content"]) == [], toast
    return str(toast["content"])


async def forwarded(stack: Stack, message_id: str) -> str:
    """A copy of the card in another chat, made clickable (the sandbox's switch)."""
    status, _ = await stack.control("POST", "/faults", {"forwarded_cards_interactive": True})
    assert status == 200
    _, copy = await stack.control(
        "POST", f"/messages/{message_id}/forward", {"chat_id": "oc_other", "by": "ou_alice"}
    )
    return str(copy["message_id"])


async def test_a_zh_bots_decisions_and_refusals_toast_in_chinese(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack("ws", cards=ZH)
    toasts: dict[str, str] = {}

    _, confirmed = await stack.offered(order_request("confirmed"))
    value = button_value(stack, confirmed)
    toasts["not an operator"] = said(await stack.click(confirmed, "ou_mallory"), "error")
    toasts["wrong chat"] = said(
        await stack.click(await forwarded(stack, confirmed), "ou_alice"), "error"
    )
    toasts["confirm"] = said(await stack.click(confirmed, "ou_alice"), "success")
    toasts["already confirmed"] = said(await stack.click(confirmed, "ou_bob", value=value), "error")

    _, rejected = await stack.offered(order_request("rejected"))
    value = button_value(stack, rejected)
    toasts["reject"] = said(await stack.click(rejected, "ou_bob", "reject"), "success")
    toasts["already rejected"] = said(await stack.click(rejected, "ou_alice", value=value), "error")

    _, expired = await stack.offered(order_request("expired", expires_in_s=30))
    value = button_value(stack, expired)
    stack.clock.offset += timedelta(seconds=31)
    toasts["expired"] = said(await stack.click(expired, "ou_alice", value=value), "error")

    assert toasts == {
        "not an operator": "您不是此操作的授权操作员。请联系授权操作员。",
        "wrong chat": "仅接受在该操作所属群组中的决定。",
        "confirm": "已确认",
        "already confirmed": "已确认，无需再次操作。",
        "reject": "已拒绝",
        "already rejected": "已拒绝。如有需要，请让发起方重新提交。",
        "expired": "此操作已过期。请让发起方重新提交。",
    }


async def test_a_counted_confirmation_toasts_in_chinese(make_stack: StackFactory) -> None:
    stack = await make_stack(
        "ws", cards=ZH, audiences=[TRIO_AUDIENCE], approval_rules=[LARGE_ORDERS_RULE]
    )
    _, message_id = await stack.offered(big_order("counted"))
    reply = await stack.click(message_id, "ou_alice")
    assert said(reply, "success") == "已计入确认：1/2，等待其他操作员。"


async def test_an_english_bots_toast_carries_chinese_for_a_zh_operator(stack: Stack) -> None:
    # the content is the cards' language; a zh operator's Lark client shows zh_cn
    _, message_id = await stack.offered(order_request())
    refused = (await stack.click(message_id, "ou_mallory"))["toast"]
    assert refused["content"].startswith("You are not an operator"), refused
    assert refused["i18n"]["zh_cn"] == "您不是此操作的授权操作员。请联系授权操作员。", refused
    assert refused["i18n"]["en_us"] == refused["content"], refused
    confirmed = (await stack.click(message_id, "ou_alice"))["toast"]
    assert (confirmed["content"], confirmed["i18n"]["zh_cn"]) == ("Confirmed", "已确认"), confirmed
