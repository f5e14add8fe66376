"""The database decides where a card click came from, as the consumer's checks do.

A click's decision is one write with no read before it (store/claims/click_writes.py), so the claim and
the reject are conditional in the database on the click's provenance too: the card's own
message, the audience's chat, one of its operators, and not the requester (unless the
audience allows it). A click from elsewhere changes nothing, whatever its caller checked.
Both backends."""

from __future__ import annotations

from typing import Any

import pytest

from store.authority.envelope import Approval, Audience, Source
from store.authority.records import Operation
from store.authority.store import Store
from store.claims.decisions import Claimed, Counted, Decided
from store.lifecycle import State
from tests.support.factories import offered
from tests.support.gate_clicks import card_click, first_write


async def nothing_decided(store: Store, op: Operation) -> None:
    assert await store.get(op.id) == op
    assert await store.claim_count(op.id) == 0
    assert await store.confirmations(op.id) == []


@pytest.mark.parametrize("action", ["confirm", "reject"])
@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"message_id": "om_another_card"}, id="another-message"),
        pytest.param({"message_id": None}, id="no-message"),
        pytest.param({"chat_id": "oc_elsewhere"}, id="another-chat"),
        pytest.param({"operator_open_id": "ou_mallory"}, id="not-an-operator"),
        pytest.param({"operator_open_id": "ou_ali"}, id="a-prefix-of-an-operator"),
    ],
)
async def test_a_card_click_from_elsewhere_changes_nothing(
    store: Store, action: str, change: dict[str, Any]
) -> None:
    op = await offered(store)
    first = await first_write(store, card_click(op, action, "ev-elsewhere", **change))
    assert first.received.first and first.decided is None
    await nothing_decided(store, op)


@pytest.mark.parametrize("action", ["confirm", "reject"])
async def test_the_requester_decides_their_own_proposal_only_where_the_audience_allows_it(
    store: Store, action: str
) -> None:
    mine = await offered(store, source=Source("dev-agent", "own-1", requester_open_id="ou_alice"))
    refused = await first_write(store, card_click(mine, action, "ev-own"))
    assert refused.decided is None
    await nothing_decided(store, mine)

    allowed = Audience("ops", "oc_ops", ("ou_alice", "ou_bob"), allow_self_approval=True)
    lenient = await offered(
        store, audience=allowed, source=Source("dev-agent", "own-2", requester_open_id="ou_alice")
    )
    decided = await first_write(store, card_click(lenient, action, "ev-own-allowed"))
    assert decided.decided is not None


@pytest.mark.parametrize(
    ("action", "state"), [("confirm", State.CLAIMED), ("reject", State.REJECTED)]
)
async def test_a_card_click_from_its_card_returns_the_operation_as_decided(
    store: Store, action: str, state: State
) -> None:
    op = await offered(store)
    first = await first_write(store, card_click(op, action, "ev-here", operator_open_id="ou_bob"))
    assert first.decided is not None
    decided = first.decided.operation
    # what the write returned is what a read now finds: the answer's card needs no read
    assert decided == await store.get(op.id)
    assert (decided.state, decided.version, decided.decided_by) == (state, op.version + 1, "ou_bob")
    assert decided.envelope == op.envelope and decided.card_message_id == op.card_message_id


# -- the approval policy: who counts toward a quorum ------------------------------------------

TRIO = ("ou_alice", "ou_bob", "ou_carol")


def counted_by(confirmations: list[Any]) -> list[str]:
    return [c.operator_open_id for c in confirmations if c.action == "confirm" and c.accepted]


async def test_the_requester_never_counts_toward_a_quorum_even_where_she_may_decide_alone(
    store: Store,
) -> None:
    """allow_self_approval lets a requester confirm a one-confirmation operation, never count
    toward two: her confirm changes nothing, before and after another's; her reject decides."""
    lenient = Audience("ops", "oc_ops", TRIO, allow_self_approval=True)
    op = await offered(
        store,
        audience=lenient,
        approval=Approval(required=2),
        source=Source("dev-agent", "own-quorum", requester_open_id="ou_alice"),
    )
    first = await first_write(store, card_click(op, "confirm", "ev-own-1"))
    assert first.decided is None and not first.already_confirmed
    await nothing_decided(store, op)

    bob = await first_write(store, card_click(op, "confirm", "ev-bob", operator_open_id="ou_bob"))
    assert isinstance(bob.decided, Counted)
    assert bob.decided.operation.confirmed_by == ("ou_bob",)
    again = await first_write(store, card_click(op, "confirm", "ev-own-2"))
    assert again.decided is None  # Bob's and hers would be two: still not counted
    assert counted_by(await store.confirmations(op.id)) == ["ou_bob"]
    assert await store.claim_count(op.id) == 0

    vetoed = await first_write(store, card_click(op, "reject", "ev-own-reject"))
    assert isinstance(vetoed.decided, Decided)
    assert vetoed.decided.operation.state is State.REJECTED
    assert vetoed.decided.operation.decided_by == "ou_alice"
    assert await store.claim_count(op.id) == 0


@pytest.mark.parametrize("required", [1, 2])
async def test_only_a_rules_narrowed_approvers_confirm(store: Store, required: int) -> None:
    """A rule naming Bob and Carol: Alice, an operator of the audience, confirms nothing
    (the database's condition, whatever the caller checked); Bob and Carol do."""
    op = await offered(
        store,
        audience=Audience("ops", "oc_ops", TRIO),
        approval=Approval(required=required, approvers=("ou_bob", "ou_carol"), rule="huge"),
    )
    refused = await first_write(store, card_click(op, "confirm", "ev-alice"))
    assert refused.decided is None and not refused.already_confirmed
    await nothing_decided(store, op)

    bob = await first_write(store, card_click(op, "confirm", "ev-bob", operator_open_id="ou_bob"))
    if required == 2:
        assert isinstance(bob.decided, Counted)
        assert await store.claim_count(op.id) == 0
        last = await first_write(
            store, card_click(op, "confirm", "ev-carol", operator_open_id="ou_carol")
        )
    else:
        last = bob
    assert isinstance(last.decided, Claimed)
    assert last.decided.operation.state is State.CLAIMED
    assert last.decided.operation.confirmed_by == ("ou_bob", "ou_carol")[:required]
    assert counted_by(await store.confirmations(op.id)) == ["ou_bob", "ou_carol"][:required]
    assert await store.claim_count(op.id) == 1


async def test_an_operator_outside_a_rules_approvers_may_still_veto(store: Store) -> None:
    op = await offered(
        store,
        audience=Audience("ops", "oc_ops", TRIO),
        approval=Approval(required=2, approvers=("ou_bob", "ou_carol"), rule="huge"),
    )
    bob = await first_write(store, card_click(op, "confirm", "ev-bob", operator_open_id="ou_bob"))
    assert isinstance(bob.decided, Counted)
    vetoed = await first_write(store, card_click(op, "reject", "ev-alice-reject"))
    assert isinstance(vetoed.decided, Decided)
    assert vetoed.decided.operation.state is State.REJECTED
    assert await store.claim_count(op.id) == 0
