"""On start, clicks a previous run received but never settled are put on record, never applied.

A crash between a click's inbox entry and its record leaves the entry `received`. The
consumer's recovery re-derives the refusal from the stored envelope and stores it; a click
the checks would let through is recorded as `recovered_unanswered` (never claimed); a click
that did claim, reject or get refused before the crash is not recorded twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bot.ingress.callbacks import INBOX_KIND
from bot.ingress.decision import parse_click
from kernel.reasons import Reason
from store import ANSWERED, RECEIVED, Claimed, Inbox, State, Store
from tests.support.clicks import click_on, consumer
from tests.support.factories import offered
from tests.support.waiting import eventually


def settled(inbox: Inbox, event_ids: list[str]) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        entries = [await inbox.get(INBOX_KIND, event_id) for event_id in event_ids]
        return all(entry is not None and entry.status == ANSWERED for entry in entries)

    return check


async def test_a_restart_records_every_received_click_once_and_claims_nothing(
    store: Store,
) -> None:
    inbox = Inbox(store)
    untouched, outsider_op, claimed_op, refused_op = [await offered(store) for _ in range(4)]
    left: dict[str, dict[str, Any]] = {
        "ev-would-claim": click_on(untouched, "ev-would-claim"),
        "ev-outsider": click_on(outsider_op, "ev-outsider", operator="ou_mallory"),
        "ev-claimed": click_on(claimed_op, "ev-claimed"),
        "ev-refused": click_on(refused_op, "ev-refused", action="reject"),
    }
    for event_id, envelope in left.items():  # what the crashed run had written
        assert (await inbox.receive(INBOX_KIND, event_id, envelope)).first
    claim = await store.confirm_and_claim(parse_click(left["ev-claimed"]).as_store_click())
    assert isinstance(claim, Claimed)
    await store.record_refusal(
        parse_click(left["ev-refused"]).as_store_click(), Reason.DIGEST_MISMATCH
    )

    callbacks = consumer(store)
    callbacks.start()
    try:
        await eventually(settled(inbox, list(left)))
        # received after this start: a live click of this run, not a leftover
        late = click_on(untouched, "ev-live")
        assert (await inbox.receive(INBOX_KIND, "ev-live", late)).first

        [would_claim] = await store.confirmations(untouched.id)
        assert (would_claim.event_id, would_claim.accepted) == ("ev-would-claim", False)
        assert would_claim.reason_code == Reason.RECOVERED_UNANSWERED.value
        [outsider] = await store.confirmations(outsider_op.id)
        assert outsider.reason_code == Reason.OPERATOR_NOT_ALLOWED.value
        [accepted] = await store.confirmations(claimed_op.id)
        assert accepted.accepted and accepted.event_id == "ev-claimed"
        [refused] = await store.confirmations(refused_op.id)
        assert refused.reason_code == Reason.DIGEST_MISMATCH.value

        # nothing was decided by the recovery
        for op in (untouched, outsider_op, refused_op):
            fresh = await store.get(op.id)
            assert fresh is not None and fresh.state is State.AWAITING_CONFIRMATION
            assert await store.claim_count(op.id) == 0
        assert await store.claim_count(claimed_op.id) == 1
        recovered = await inbox.get(INBOX_KIND, "ev-would-claim")
        assert recovered is not None and recovered.answer is not None  # what a replay gets
        assert recovered.answer["toast"]["type"] == "error"
        live = await inbox.get(INBOX_KIND, "ev-live")
        assert live is not None and live.status == RECEIVED

        # the card is still live: a new click decides it as usual
        answer = await callbacks.on_callback(click_on(untouched, "ev-again"), "ws")
        assert answer["toast"]["type"] == "success", answer
        assert await store.claim_count(untouched.id) == 1
    finally:
        await callbacks.stop()
