"""Every refusal class: its own reason code, an error toast, no claim, no state change."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from datetime import timedelta
from typing import Any

import aiohttp
import pytest

from kernel.reasons import Reason
from larksandbox import DEFAULT_APP_ID, sealed_body, signed_headers
from tests.support.factories import order_request
from tests.support.stack import Stack, button_value, envelope_for, push


async def refused(
    stack: Stack, view: dict[str, Any], reply: dict[str, Any], reason: Reason
) -> None:
    """The click got an error toast, its refusal is stored with `reason`, nothing else moved."""
    assert reply["status"] == "answered", reply
    toast = reply.get("toast") or (reply.get("answer") or {}).get("toast")
    assert toast is not None and toast["type"] == "error", reply
    assert "Traceback" not in json.dumps(toast) and "secret" not in json.dumps(toast).lower()
    event_id = reply.get("event_id")
    stored = await stack.stored_click(view["id"], event_id if isinstance(event_id, str) else None)
    assert stored.reason_code == reason.value, stored
    assert not stored.accepted
    assert await stack.store.claim_count(view["id"]) == 0 or reason is Reason.ALREADY_CLAIMED


async def test_wrong_app_id(stack: Stack) -> None:
    view, message_id = await stack.offered(order_request())
    envelope = envelope_for(stack, message_id, "ou_alice", button_value(stack, message_id))
    envelope["header"]["app_id"] = "cli_somebody_else"
    await refused(stack, view, await push(stack, envelope), Reason.APP_MISMATCH)


async def test_user_of_another_tenant(stack: Stack) -> None:
    view, message_id = await stack.offered(order_request())
    stack.state.chats["oc_ops"].members.append("ou_eve")  # a shared chat with an outsider
    await refused(stack, view, await stack.click(message_id, "ou_eve"), Reason.TENANT_NOT_ALLOWED)


async def test_a_member_who_is_not_an_operator(stack: Stack) -> None:
    view, message_id = await stack.offered(order_request())
    await refused(
        stack, view, await stack.click(message_id, "ou_mallory"), Reason.OPERATOR_NOT_ALLOWED
    )


async def clickable_copies(stack: Stack) -> None:
    """Lark delivers clicks on forwarded copies only for cards that set
    `config.enable_forward_interaction` (ours do not); the sandbox's switch delivers them
    anyway, so the bot's own refusal of a copy is what these tests see."""
    status, faults = await stack.control("POST", "/faults", {"forwarded_cards_interactive": True})
    assert status == 200 and faults["forwarded_cards_interactive"] is True


async def test_a_card_forwarded_to_another_chat(stack: Stack) -> None:
    view, message_id = await stack.offered(order_request())
    await clickable_copies(stack)
    _, copy = await stack.control(
        "POST", f"/messages/{message_id}/forward", {"chat_id": "oc_other", "by": "ou_alice"}
    )
    reply = await stack.click(copy["message_id"], "ou_alice")
    await refused(stack, view, reply, Reason.CHAT_MISMATCH)


async def test_a_copy_of_the_card_in_the_same_chat(stack: Stack) -> None:
    view, message_id = await stack.offered(order_request())
    await clickable_copies(stack)
    _, copy = await stack.control(
        "POST", f"/messages/{message_id}/forward", {"chat_id": "oc_ops", "by": "ou_bob"}
    )
    await refused(
        stack, view, await stack.click(copy["message_id"], "ou_alice"), Reason.MESSAGE_MISMATCH
    )


async def test_a_stale_digest(stack: Stack) -> None:
    view, message_id = await stack.offered(order_request())
    value = button_value(stack, message_id)
    value["digest"] = hashlib.sha256(b"terms as they were before").hexdigest()
    await refused(
        stack, view, await stack.click(message_id, "ou_alice", value=value), Reason.DIGEST_MISMATCH
    )


async def test_after_expiry(stack: Stack) -> None:
    view, message_id = await stack.offered(order_request(expires_in_s=30))
    value = button_value(stack, message_id)
    stack.clock.offset += timedelta(seconds=31)
    await refused(
        stack, view, await stack.click(message_id, "ou_alice", value=value), Reason.EXPIRED
    )


async def test_already_claimed(stack: Stack) -> None:
    view, message_id = await stack.offered(order_request())
    value = button_value(stack, message_id)
    assert (await stack.click(message_id, "ou_alice"))["toast"]["type"] == "success"
    reply = await stack.click(message_id, "ou_bob", value=value)
    await refused(stack, view, reply, Reason.ALREADY_CLAIMED)
    assert await stack.store.claim_count(view["id"]) == 1


async def test_cancelled_by_the_proposer(stack: Stack) -> None:
    view, message_id = await stack.offered(order_request())
    value = button_value(stack, message_id)
    status, _ = await stack.api("POST", f"/api/v1/operations/{view['id']}/cancel")
    assert status == 200
    await refused(
        stack, view, await stack.click(message_id, "ou_alice", value=value), Reason.CANCELLED
    )


async def test_already_rejected(stack: Stack) -> None:
    view, message_id = await stack.offered(order_request())
    value = button_value(stack, message_id)
    assert (await stack.click(message_id, "ou_bob", "reject"))["toast"]["type"] == "success"
    await refused(
        stack, view, await stack.click(message_id, "ou_alice", value=value), Reason.ALREADY_REJECTED
    )


async def test_self_approval_unless_the_audience_allows_it(stack: Stack) -> None:
    view, message_id = await stack.offered(order_request(source={"requester_open_id": "ou_alice"}))
    await refused(stack, view, await stack.click(message_id, "ou_alice"), Reason.SELF_APPROVAL)
    assert (await stack.click(message_id, "ou_bob"))["toast"]["type"] == "success"


async def test_a_replayed_event_gets_the_first_answer_and_claims_once(stack: Stack) -> None:
    view, message_id = await stack.offered(order_request())
    envelope = envelope_for(stack, message_id, "ou_alice", button_value(stack, message_id))
    first = await push(stack, envelope)
    again = await push(stack, envelope)
    assert first["answer"]["toast"]["type"] == "success"
    assert again["answer"] == first["answer"]
    assert await stack.store.claim_count(view["id"]) == 1
    assert len(await stack.store.confirmations(view["id"])) == 1


async def test_a_replay_racing_the_first_delivery_gets_the_same_answer(stack: Stack) -> None:
    # Both copies arrive while the first is still being decided: the replay waits for the
    # first answer instead of a "processing" toast that would leave the card stale.
    view, message_id = await stack.offered(order_request())
    envelope = envelope_for(stack, message_id, "ou_alice", button_value(stack, message_id))
    first, again = await asyncio.gather(push(stack, envelope), push(stack, envelope))
    assert first["answer"] == again["answer"]
    assert first["answer"]["toast"]["type"] == "success"
    assert "card" in first["answer"]
    assert await stack.store.claim_count(view["id"]) == 1


@pytest.mark.parametrize(
    "mangle",
    ["missing", "extra", "v_as_text", "digest_not_hex", "op_not_an_id", "not_an_object"],
)
async def test_malformed_callback_values(stack: Stack, mangle: str) -> None:
    view, message_id = await stack.offered(order_request())
    value: Any = button_value(stack, message_id)
    if mangle == "missing":
        del value["digest"]
    elif mangle == "extra":
        value["confirmed"] = True
    elif mangle == "v_as_text":
        value["v"] = "1"
    elif mangle == "digest_not_hex":
        value["digest"] = "z" * 64
    elif mangle == "op_not_an_id":
        value["op"] = "../../etc"
    else:
        value = {"value": ["confirm"]}
    reply = await stack.click(message_id, "ou_alice", value=value)
    assert reply["toast"]["type"] == "error"
    assert await stack.store.claim_count(view["id"]) == 0
    if mangle != "op_not_an_id" and mangle != "not_an_object":
        await refused(stack, view, reply, Reason.MALFORMED_VALUE)


async def test_unsigned_tampered_and_stale_webhooks_are_refused(make_stack: Any) -> None:
    stack: Stack = await make_stack("webhook")
    view, message_id = await stack.offered(order_request())
    envelope = envelope_for(stack, message_id, "ou_alice", button_value(stack, message_id))
    app = stack.state.apps[DEFAULT_APP_ID]
    body = sealed_body(app, envelope)
    good = signed_headers(app, body)
    stale = dict(good)
    stale["X-Lark-Request-Timestamp"] = str(int(time.time()) - 3600)
    tampered = bytearray(body)
    tampered[len(tampered) // 2] ^= 1
    cases: list[tuple[bytes, dict[str, str]]] = [
        (body, {"Content-Type": "application/json"}),  # unsigned
        (bytes(tampered), good),
        (body, {**good, "X-Lark-Signature": "0" * 64}),
        (body, stale),
    ]
    async with aiohttp.ClientSession() as http:
        for payload, headers in cases:
            async with http.post(
                f"{stack.bot_url}/lark/card", data=payload, headers=headers
            ) as response:
                assert response.status == 401, headers
                assert "encrypt" not in (await response.text()).lower()
    assert await stack.store.claim_count(view["id"]) == 0
    assert await stack.store.confirmations(view["id"]) == []
    async with aiohttp.ClientSession() as http:  # the genuine request still works
        async with http.post(f"{stack.bot_url}/lark/card", data=body, headers=good) as response:
            assert response.status == 200
            assert (await response.json())["toast"]["type"] == "success"
