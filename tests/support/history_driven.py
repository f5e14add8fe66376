"""A little history driven end to end through the bot and the sandbox (a filled order
replied to, a refusal and a reject, a cancel, a message draft sent, a counterparty's text),
for the tests that copy history (tests/store/test_history_growth.py) or prune it
(tests/store/test_prune.py)."""

from __future__ import annotations

from sqlalchemy import text

from bench.history_multiply import working_sql
from store import State
from tests.support.factories import message_request, order_request
from tests.support.proposer_routes import conversation, with_routes
from tests.support.stack import Stack
from tests.support.waiting import eventually
from workers.domains.finance.examples import LIMIT_BUY

# no protective children: an order whose stop-loss still works stays on the executor's
# schedule, and the multiplication leaves such operations out
PLAIN_ORDER = dict(LIMIT_BUY)


async def drive(stack: Stack) -> None:
    """A filled order replied to in its conversation, a refused click then a reject with a
    reason, a cancel, a message draft sent, and a counterparty's text (a signal)."""
    thread = await conversation(stack)
    filled, filled_card = await stack.offered(
        with_routes(order_request("hist-filled", payload=PLAIN_ORDER), conversation_id=thread)
    )
    refused = await stack.click(filled_card, "ou_mallory")
    assert refused["toast"]["type"] != "success", refused
    assert (await stack.click(filled_card, "ou_alice"))["toast"]["type"] == "success"
    rejected, rejected_card = await stack.offered(order_request("hist-rejected"))
    await stack.click(rejected_card, "ou_bob", "reject", form={"reason": "too big"})
    cancelled = await stack.propose(order_request("hist-cancelled"))
    status, _ = await stack.post(f"/api/v1/operations/{cancelled['id']}/cancel", {})
    assert status == 200
    draft, draft_card = await stack.offered(message_request("hist-draft"))
    assert (await stack.click(draft_card, "ou_bob"))["toast"]["type"] == "success"
    status, _ = await stack.control(
        "POST", "/chats/oc_acme/messages", {"sender": "ou_alice", "text": "see you Friday"}
    )
    assert status == 201

    async def finished() -> bool:
        ops = [await stack.store.get(v["id"]) for v in (filled, rejected, cancelled, draft)]
        if any(op is None or op.state is State.AWAITING_CONFIRMATION for op in ops):
            return False
        async with stack.store.engine.connect() as conn:
            working = (await conn.execute(text(working_sql()))).all()
            deliveries = await conn.execute(text("SELECT count(*) FROM deliveries"))
            return not working and int(deliveries.scalar() or 0) > 0

    await eventually(finished, deadline_s=60)
