"""A confirmed message blocks re-filing to the same destination until its send resolves
(issue 17, item 4): an unknown send waits for its reconciliation, and only then may the
agent file its next draft for that counterparty. Both backends."""

from __future__ import annotations

from tests.support.factories import message_request
from tests.support.stack import Stack, StackFactory, settled
from tests.support.waiting import eventually

UNRESOLVED = ("dispatching", "submission_unknown")


async def test_a_re_file_waits_until_the_confirmed_send_is_reconciled(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    view, message_id = await stack.offered(message_request("refile-1"))
    # Lark posts every message but loses each answer: the send stays unknown, reconciling
    status, _ = await stack.control("POST", "/faults", {"lose_next_create_answers": 1000})
    assert status == 200
    assert (await stack.click(message_id, "ou_alice"))["toast"]["type"] == "success"

    async def in_flight() -> bool:  # posted in oc_acme, the bot does not know it yet
        op = await stack.store.get(view["id"])
        posted = any(m.chat_id == "oc_acme" for m in stack.state.messages.values())
        return posted and op is not None and op.execution_state in UNRESOLVED

    await eventually(in_flight, woken_by=stack.state)

    newer = message_request("refile-2")
    newer["payload"]["text"] = "Corrected: delivery on Saturday."
    for path in ("/api/v1/operations", "/api/v1/operations/check"):
        status, refused = await stack.post(path, newer)
        assert status == 409 and refused["error"]["code"] == "active_claim", refused
        assert view["id"] in refused["error"]["message"]
    assert len((await stack.store.list_operations(limit=10)).items) == 1

    status, _ = await stack.control("POST", "/faults", {"lose_next_create_answers": 0})
    assert status == 200
    await settled(stack, view["id"], "sent")  # reconciled with the same uuid: one message
    status, filed = await stack.post("/api/v1/operations", newer)
    assert status == 201, filed
    in_acme = [m for m in stack.state.messages.values() if m.chat_id == "oc_acme"]
    assert len(in_acme) == 1
