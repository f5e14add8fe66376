"""Where an operation stands for someone waiting on it: the API's `?until=` and
`countersign show --wait` ask the same two questions of the one projection.

Decided: no operator decision is pending any more (confirmed, rejected, or closed without
one: cancelled, expired, superseded). Final: nothing more will happen by itself: closed
without running, or an outcome that is not still moving. Both are conditions on the
current view, not on a change seen, so a waiter that asks again never misses one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from store.lifecycle import OPEN_UNCLAIMED, TERMINAL_UNCLAIMED

MAX_WAIT_S = 60  # one long poll of the API at most; the CLI asks again for longer waits
Until = Literal["changed", "decided", "final"]
UNTIL: tuple[Until, ...] = ("changed", "decided", "final")

# Outcomes after which the executor keeps going: an order the venue still works (accepted,
# resting, partly filled) and a submission being reconciled. Every other status (filled,
# sent, refused, not submitted, unresolved: people take over) is where it ends.
STILL_MOVING = frozenset({"accepted", "resting", "partially_filled", "unknown"})
OPEN = frozenset(state.value for state in OPEN_UNCLAIMED)
CLOSED_UNRUN = frozenset(state.value for state in TERMINAL_UNCLAIMED)


def decided(view: Mapping[str, Any]) -> bool:
    return view["state"] not in OPEN


def final(view: Mapping[str, Any]) -> bool:
    if view["state"] in CLOSED_UNRUN:
        return True
    outcome = view.get("outcome")
    return outcome is not None and outcome["status"] not in STILL_MOVING


def reached(view: Mapping[str, Any], until: Until) -> bool:
    """Whether `view` already is what `until` waits for ("changed" never is: it needs a change)."""
    if until == "decided":
        return decided(view)
    if until == "final":
        return final(view)
    return False
