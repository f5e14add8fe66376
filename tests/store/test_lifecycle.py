from __future__ import annotations

import pytest

from store.lifecycle import (
    OPEN_UNCLAIMED,
    TERMINAL_UNCLAIMED,
    TRANSITIONS,
    Event,
    IllegalTransition,
    State,
    next_state,
    sources_for,
)


def test_the_happy_path_follows_the_design() -> None:
    state = State.PREPARED
    for event, expected in [
        (Event.CARD_SENT, State.AWAITING_CONFIRMATION),
        (Event.CONFIRMED, State.CLAIMED),
        (Event.OUTCOME, State.OUTCOME_OBSERVED),
        (Event.OUTCOME, State.OUTCOME_OBSERVED),
    ]:
        state = next_state(state, event)
        assert state is expected


@pytest.mark.parametrize("state", sorted(TERMINAL_UNCLAIMED))
@pytest.mark.parametrize("event", list(Event))
def test_closed_unclaimed_operations_accept_no_event(state: State, event: Event) -> None:
    with pytest.raises(IllegalTransition) as raised:
        next_state(state, event)
    assert raised.value.current is state and raised.value.event is event


@pytest.mark.parametrize(
    "event", [Event.CANCELLED, Event.EXPIRED, Event.SUPERSEDED, Event.REJECTED, Event.CONFIRMED]
)
def test_a_claim_is_never_discarded(event: Event) -> None:
    for state in (State.CLAIMED, State.OUTCOME_OBSERVED):
        with pytest.raises(IllegalTransition):
            next_state(state, event)


def test_only_unclaimed_operations_can_be_cancelled_expired_or_superseded() -> None:
    for event in (Event.CANCELLED, Event.EXPIRED, Event.SUPERSEDED):
        assert set(sources_for(event)) == OPEN_UNCLAIMED


def test_confirm_and_reject_need_a_sent_card() -> None:
    assert sources_for(Event.CONFIRMED) == (State.AWAITING_CONFIRMATION,)
    assert sources_for(Event.REJECTED) == (State.AWAITING_CONFIRMATION,)
    assert (State.PREPARED, Event.CONFIRMED) not in TRANSITIONS
