"""What the executor records of its own accord, not from a venue's answer: a refusal before
dispatch (nothing sent, nothing held), a reservation over budget, and a submission that may
or may not be on the venue (held, looked up by the reconciler). Pure."""

from __future__ import annotations

from store import Execution, Observation, ReservationRefused, ReservationState, Stage
from workers.domains.execution import UNKNOWN, Refusal


def refused_before_dispatch(refusal: Refusal, execution: Execution) -> Observation:
    """Refused before dispatch: nothing was sent, so nothing is held and nothing to look at."""
    return Observation(
        Stage.INITIAL,
        execution.value,  # preflight_rejected / reservation_refused
        execution,
        refusal.detail(),
        settles=ReservationState.RELEASED,
    )


def over_budget(refused: ReservationRefused) -> Observation:
    return refused_before_dispatch(
        Refusal(
            "budget_exceeded",
            refused.reason,
            "wait for open orders to settle, or propose a smaller order",
        ),
        Execution.RESERVATION_REFUSED,
    )


def submission_unknown(reason: str, *, look_again_in_s: float | None) -> Observation:
    """The submission may or may not be on the venue: the reservation stays held, the
    reconciler looks the client id up."""
    return Observation(
        Stage.INITIAL,
        UNKNOWN,
        Execution.SUBMISSION_UNKNOWN,
        {"reason": reason},
        look_again_in_s=look_again_in_s,
        answers_attempt=True,
        attempt_error=reason,
    )
