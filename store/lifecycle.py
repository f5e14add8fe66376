"""The operation lifecycle: one transition table, asked by everything else."""

from __future__ import annotations

from collections.abc import Mapping

from store.vocabulary import Event as Event
from store.vocabulary import Execution as Execution
from store.vocabulary import State as State

TRANSITIONS: Mapping[tuple[State, Event], State] = {
    (State.PREPARED, Event.CARD_SENT): State.AWAITING_CONFIRMATION,
    (State.PREPARED, Event.CANCELLED): State.CANCELLED,
    (State.PREPARED, Event.EXPIRED): State.EXPIRED,
    (State.PREPARED, Event.SUPERSEDED): State.SUPERSEDED,
    (State.AWAITING_CONFIRMATION, Event.CONFIRMATION_COUNTED): State.AWAITING_CONFIRMATION,
    (State.AWAITING_CONFIRMATION, Event.CONFIRMED): State.CLAIMED,
    (State.AWAITING_CONFIRMATION, Event.REJECTED): State.REJECTED,
    (State.AWAITING_CONFIRMATION, Event.CANCELLED): State.CANCELLED,
    (State.AWAITING_CONFIRMATION, Event.EXPIRED): State.EXPIRED,
    (State.AWAITING_CONFIRMATION, Event.SUPERSEDED): State.SUPERSEDED,
    # a message draft sent back to its proposer for a rewrite; a re-file is a new draft
    (State.AWAITING_CONFIRMATION, Event.CHANGES_REQUESTED): State.CHANGES_REQUESTED,
    (State.CLAIMED, Event.OUTCOME): State.OUTCOME_OBSERVED,
    # A reconciliation appends another outcome; the envelope state stays put.
    (State.OUTCOME_OBSERVED, Event.OUTCOME): State.OUTCOME_OBSERVED,
}

# States from which nothing but outcomes can follow; a claim is never discarded.
TERMINAL_UNCLAIMED: frozenset[State] = frozenset(
    {State.REJECTED, State.CANCELLED, State.EXPIRED, State.SUPERSEDED, State.CHANGES_REQUESTED}
)
OPEN_UNCLAIMED: frozenset[State] = frozenset({State.PREPARED, State.AWAITING_CONFIRMATION})


class IllegalTransition(Exception):
    """`event` is not allowed in state `current`."""

    def __init__(self, current: State, event: Event) -> None:
        super().__init__(f"cannot apply {event.value!r} to an operation in state {current.value!r}")
        self.current = current
        self.event = event


def next_state(current: State, event: Event) -> State:
    try:
        return TRANSITIONS[(current, event)]
    except KeyError:
        raise IllegalTransition(current, event) from None


def sources_for(event: Event) -> tuple[State, ...]:
    """Every state in which `event` is allowed, in a stable order (for conditional updates)."""
    return tuple(sorted({src for (src, ev) in TRANSITIONS if ev is event}, key=list(State).index))


# -- execution, after the claim -------------------------------------------------------------
# Tracked apart from the envelope state: a claimed operation moves through these while the
# executor and the reconciler work; the envelope goes to outcome_observed with the first
# outcome.


EXECUTION_TRANSITIONS: Mapping[Execution, frozenset[Execution]] = {
    Execution.QUEUED: frozenset({Execution.PREFLIGHT}),
    Execution.PREFLIGHT: frozenset(
        {Execution.RESERVED, Execution.PREFLIGHT_REJECTED, Execution.RESERVATION_REFUSED}
    ),
    # a domain disabled (or a build changed) between reservation and dispatch refuses
    Execution.RESERVED: frozenset({Execution.DISPATCHING, Execution.PREFLIGHT_REJECTED}),
    Execution.DISPATCHING: frozenset(
        {Execution.SUBMITTED, Execution.SUBMISSION_UNKNOWN, Execution.COMPLETED}
    ),
    # a working order is looked at again: each change it shows is an outcome of its own
    Execution.SUBMITTED: frozenset(
        {Execution.SUBMITTED, Execution.COMPLETED, Execution.SUBMISSION_UNKNOWN}
    ),
    Execution.SUBMISSION_UNKNOWN: frozenset({Execution.RECONCILED, Execution.SUBMISSION_UNKNOWN}),
    Execution.COMPLETED: frozenset({Execution.COMPLETED, Execution.RECONCILED}),
    Execution.RECONCILED: frozenset({Execution.RECONCILED}),
    Execution.PREFLIGHT_REJECTED: frozenset(),
    Execution.RESERVATION_REFUSED: frozenset(),
}


class IllegalExecutionStep(Exception):
    def __init__(self, current: Execution, target: Execution) -> None:
        super().__init__(f"execution cannot go from {current.value!r} to {target.value!r}")
        self.current = current
        self.target = target


def execution_sources(target: Execution) -> tuple[Execution, ...]:
    """Every execution state from which `target` may follow (for conditional updates)."""
    return tuple(state for state, nexts in EXECUTION_TRANSITIONS.items() if target in nexts)
