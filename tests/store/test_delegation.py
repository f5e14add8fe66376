"""Delegated approval rights at the database's click gate (store/claims/delegation_sql.py),
both backends: a delegate confirms with the delegator's right while it is in force, the
quorum counts a person once and a right once, a revocation or an end applies at once to a
card already out, a requester never acts as a delegate on their own proposal, and each
grant, use, revocation and end is an audit entry."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from store import (
    Approval,
    Audience,
    Claimed,
    Counted,
    DelegationLedger,
    DelegationRefused,
    Operation,
    Source,
    State,
    Store,
    delegation_subject,
)
from tests.support.factories import offered
from tests.support.gate_clicks import card_click, first_write

TRIO = Audience("ops", "oc_ops", ("ou_alice", "ou_bob", "ou_carol"))
DAY = timedelta(days=1)


def quorum(required: int = 2, **more: Any) -> dict[str, Any]:
    return {"audience": TRIO, "approval": Approval(required=required, **more)}


async def grant(store: Store, delegator: str, delegate: str, **more: Any) -> str:
    ledger = DelegationLedger(store)
    ends = more.pop("ends_at", store.clock() + DAY)
    granted = await ledger.grant("ops", delegator, delegate, ends_at=ends, by="admin:cli", **more)
    return granted.id


async def confirm(store: Store, op: Operation, person: str, event: str) -> Any:
    written = await first_write(store, card_click(op, "confirm", event, operator_open_id=person))
    return written


async def test_a_delegate_confirms_for_the_delegator_and_the_card_says_so(store: Store) -> None:
    op = await offered(store, **quorum(required=1))
    await grant(store, "ou_alice", "ou_dave")
    written = await confirm(store, op, "ou_dave", "ev-dave")
    assert isinstance(written.decided, Claimed)
    claimed = written.decided.operation
    assert claimed.state is State.CLAIMED and claimed.confirmed_by == ("ou_dave",)
    right = claimed.delegated["ou_dave"]
    assert right.on_behalf_of == "ou_alice" and right.until.endswith("Z")
    actors = [entry.actor for entry in await store.audit(op.id)]
    assert "operator:ou_dave for ou_alice" in actors


async def test_without_a_delegation_the_same_click_changes_nothing(store: Store) -> None:
    op = await offered(store, **quorum(required=1))
    written = await confirm(store, op, "ou_dave", "ev-nobody")
    assert written.decided is None
    assert (await store.get(op.id)) == op


async def test_two_of_three_where_bob_holds_alices_right_still_needs_two_people(
    store: Store,
) -> None:
    op = await offered(store, **quorum(required=2))
    await grant(store, "ou_alice", "ou_bob")
    first = await confirm(store, op, "ou_bob", "ev-bob")
    assert isinstance(first.decided, Counted)
    again = await confirm(store, op, "ou_bob", "ev-bob-again")  # as Alice's delegate now?
    assert again.decided is None and again.already_confirmed  # a person counts once
    last = await confirm(store, op, "ou_carol", "ev-carol")
    assert isinstance(last.decided, Claimed)
    assert last.decided.operation.confirmed_by == ("ou_bob", "ou_carol")
    assert last.decided.operation.delegated == {}  # Bob used his own right


async def test_a_right_used_by_a_delegate_is_used_and_the_holder_counts_nothing_more(
    store: Store,
) -> None:
    op = await offered(store, **quorum(required=2))
    await grant(store, "ou_alice", "ou_dave")
    dave = await confirm(store, op, "ou_dave", "ev-dave")
    assert isinstance(dave.decided, Counted)
    assert dave.decided.operation.delegated["ou_dave"].on_behalf_of == "ou_alice"
    alice = await confirm(store, op, "ou_alice", "ev-alice")  # her right is used
    assert alice.decided is None and alice.already_confirmed
    carol = await confirm(store, op, "ou_carol", "ev-carol")
    assert isinstance(carol.decided, Claimed)
    done = carol.decided.operation
    assert done.confirmed_by == ("ou_dave", "ou_carol")
    assert set(done.delegated) == {"ou_dave"}


async def test_a_revocation_applies_at_once_to_a_card_already_out(store: Store) -> None:
    op = await offered(store, **quorum(required=1))
    delegation_id = await grant(store, "ou_alice", "ou_dave")
    ledger = DelegationLedger(store)
    revoked = await ledger.revoke(delegation_id, "operator:ou_alice")
    assert revoked is not None and revoked.revoked_by == "operator:ou_alice"
    assert await ledger.revoke(delegation_id, "operator:ou_alice") is None  # once
    refused = await confirm(store, op, "ou_dave", "ev-after-revoke")
    assert refused.decided is None
    events = [entry.event for entry in await store.audit(delegation_subject(delegation_id))]
    assert events == ["delegation_granted", "delegation_revoked"]


async def test_an_ended_delegation_applies_no_more_and_its_end_is_audited_once(
    store: Store,
) -> None:
    op = await offered(
        store,
        **quorum(
            required=1,
        ),
    )
    ends = store.clock() + timedelta(minutes=5)
    delegation_id = await grant(store, "ou_alice", "ou_dave", ends_at=ends)
    ledger = DelegationLedger(store)
    assert await ledger.audit_ended() == 0
    store.clock = lambda: ends + timedelta(seconds=1)  # type: ignore[method-assign]
    refused = await confirm(store, op, "ou_dave", "ev-after-end")
    assert refused.decided is None
    assert await ledger.audit_ended() == 1
    assert await ledger.audit_ended() == 0
    events = [entry.event for entry in await store.audit(delegation_subject(delegation_id))]
    assert events == ["delegation_granted", "delegation_ended"]


async def test_a_requester_never_acts_as_a_delegate_on_their_own_proposal(store: Store) -> None:
    mine = await offered(
        store,
        source=Source("dev-agent", "own-1", requester_open_id="ou_dave"),
        **quorum(required=1),
    )
    await grant(store, "ou_alice", "ou_dave")
    refused = await confirm(store, mine, "ou_dave", "ev-own")
    assert refused.decided is None
    # nor does a delegate act for the requester
    theirs = await offered(
        store,
        source=Source("dev-agent", "own-2", requester_open_id="ou_bob"),
        **quorum(required=1),
    )
    await grant(store, "ou_bob", "ou_erin")
    assert (await confirm(store, theirs, "ou_erin", "ev-for-requester")).decided is None


async def test_a_delegate_of_an_operator_may_reject(store: Store) -> None:
    op = await offered(store, **quorum(required=2))
    await grant(store, "ou_alice", "ou_dave")
    written = await first_write(
        store, card_click(op, "reject", "ev-reject", operator_open_id="ou_dave")
    )
    assert written.decided is not None
    assert written.decided.operation.state is State.REJECTED
    actors = [entry.actor for entry in await store.audit(op.id)]
    assert "operator:ou_dave for ou_alice" in actors  # the use of the right, audited
    # an operator's own reject names nobody else
    other = await offered(store, **quorum(required=2))
    own = await first_write(store, card_click(other, "reject", "ev-own-reject"))
    assert own.decided is not None
    assert "operator:ou_alice" in [entry.actor for entry in await store.audit(other.id)]


@pytest.mark.parametrize(
    "delegator, delegate, ends", [("ou_alice", "ou_alice", DAY), ("ou_alice", "ou_dave", -DAY)]
)
async def test_a_right_to_oneself_or_a_window_already_over_is_refused_and_writes_nothing(
    store: Store, delegator: str, delegate: str, ends: timedelta
) -> None:
    with pytest.raises(DelegationRefused):
        await DelegationLedger(store).grant(
            "ops", delegator, delegate, ends_at=store.clock() + ends, by="admin:cli"
        )
    assert await DelegationLedger(store).listed(ended=True) == []
