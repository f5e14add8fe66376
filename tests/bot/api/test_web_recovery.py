"""A web decision's post whose run died between its first write and its answer (issue 15).

The first write (inbox entry and decision, one commit) is made by the real ClickWrites the web
entry uses; the answer is never stored, as after a SIGKILL between the two. The next run's
recovery answers it from its record, or, with no decision on record, records it refused
`recovered_unanswered`; it never claims or rejects. Both backends.
"""

from __future__ import annotations

from typing import Any

from bot.api.web_decide import INBOX_KIND
from bot.api.web_recovery import WebRecovery
from store import (
    ANSWERED,
    RECEIVED,
    Approval,
    Audience,
    Claimed,
    Click,
    ClickWrites,
    Counted,
    Inbox,
    Operation,
    State,
    Store,
)
from tests.support.factories import offered

TRIO = Audience("ops", "oc_ops", ("ou_alice", "ou_bob", "ou_carol"))


def asked(op: Operation, action: str, operator: str) -> dict[str, Any]:
    """The entry's payload as bot/api/web_decide.py writes it."""
    return {
        "operation_id": op.id,
        "action": action,
        "digest": op.confirm_digest,
        "operator": operator,
        "tenant_key": "sandbox-tenant",
        "entry": "web",
    }


async def first_write_only(
    store: Store, op: Operation, key: str, operator: str = "ou_alice", *, decide: bool = True
) -> Any:
    """The post's first write and nothing after it; `decide` False: a post refused by its own
    values, whose refusal is recorded only with the answer."""
    click = Click(op.id, "confirm", op.confirm_digest, operator, event_id=key, entry="web")
    writes = ClickWrites(store, INBOX_KIND)
    pending = writes.enqueue(key, asked(op, "confirm", operator), click if decide else None)
    return (await writes.outcome(pending)).decided


async def test_a_claim_left_unanswered_is_answered_as_claimed_and_nothing_else_changes(
    store: Store,
) -> None:
    op = await offered(store)
    assert isinstance(await first_write_only(store, op, "form-key-claimed-000001"), Claimed)
    inbox = Inbox(store)
    left = await inbox.get(INBOX_KIND, "form-key-claimed-000001")
    assert left is not None and left.status == RECEIVED and left.answer is None

    await WebRecovery(store, recover_after_s=0).run(store.clock())

    entry = await inbox.get(INBOX_KIND, "form-key-claimed-000001")
    assert entry is not None and entry.status == ANSWERED
    assert entry.answer == {"result": "claimed"}
    assert await store.claim_count(op.id) == 1
    [record] = await store.confirmations(op.id)
    assert (record.accepted, record.entry) == (True, "web")


async def test_one_of_two_confirmations_left_unanswered_is_answered_as_counted(
    store: Store,
) -> None:
    op = await offered(store, audience=TRIO, approval=Approval(required=2))
    assert isinstance(await first_write_only(store, op, "form-key-counted-000001"), Counted)

    await WebRecovery(store, recover_after_s=0).run(store.clock())

    entry = await Inbox(store).get(INBOX_KIND, "form-key-counted-000001")
    assert entry is not None and entry.answer == {"result": "counted", "counted": 1, "required": 2}
    still = await store.get(op.id)
    assert still is not None and still.state is State.AWAITING_CONFIRMATION


async def test_a_post_with_no_decision_on_record_is_recorded_refused_and_never_applied(
    store: Store,
) -> None:
    op = await offered(store)
    assert await first_write_only(store, op, "form-key-nodecision-01", decide=False) is None

    await WebRecovery(store, recover_after_s=0).run(store.clock())

    entry = await Inbox(store).get(INBOX_KIND, "form-key-nodecision-01")
    assert entry is not None and entry.status == ANSWERED
    assert entry.answer == {"result": "refused", "reason": "recovered_unanswered"}
    [record] = await store.confirmations(op.id)
    assert (record.accepted, record.reason_code, record.entry, record.digest) == (
        False,
        "recovered_unanswered",
        "web",
        op.confirm_digest,
    )
    still = await store.get(op.id)
    assert still is not None and still.state is State.AWAITING_CONFIRMATION
    assert await store.claim_count(op.id) == 0


async def test_a_post_of_this_run_is_left_to_this_run_and_a_second_recovery_finds_nothing(
    store: Store,
) -> None:
    op = await offered(store)
    started_at = store.clock()
    await first_write_only(store, op, "form-key-this-run-0001")  # after this run started

    await WebRecovery(store, recover_after_s=0).run(started_at)
    entry = await Inbox(store).get(INBOX_KIND, "form-key-this-run-0001")
    assert entry is not None and entry.status == RECEIVED and entry.answer is None

    await WebRecovery(store, recover_after_s=0).run(store.clock())
    await WebRecovery(store, recover_after_s=0).run(store.clock())
    answered = await Inbox(store).get(INBOX_KIND, "form-key-this-run-0001")
    assert answered is not None and answered.answer == {"result": "claimed"}
    assert len(await store.confirmations(op.id)) == 1  # recovered once, nothing added
