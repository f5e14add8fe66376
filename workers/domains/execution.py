"""What the executor asks of a domain after the claim: prepare, submit, look up.

A domain's runner does the I/O with its venue (the simulated exchange, Lark); the executor
worker (`workers.executor`) owns the order of steps, the records and the crash safety, so
every domain gets the same guarantees: one attempt with a stable client id, recorded
before dispatch; ambiguity reconciled by lookup, never by submitting again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from store.records import Operation
from store.reservations import Exposure

CLIENT_ID_PREFIX = "cs-"


def client_id_for(operation_id: str) -> str:
    """The stable client id (venue order id, Lark uuid) of an operation's one attempt."""
    return f"{CLIENT_ID_PREFIX}{operation_id}"


def operation_of(client_id: str) -> str | None:
    """The operation a venue client id belongs to (protective children included)."""
    if not client_id.startswith(CLIENT_ID_PREFIX):
        return None
    return client_id[len(CLIENT_ID_PREFIX) :].split(":", 1)[0]


@dataclass(frozen=True)
class Refusal:
    """The operation cannot run exactly as confirmed; nothing was sent."""

    code: str
    reason: str
    hint: str = "propose a new operation with corrected terms"

    def detail(self) -> dict[str, Any]:
        return {"code": self.code, "reason": self.reason, "hint": self.hint}


# Exposure to reserve before submission, against the account's budget: the store's own
# record, handed to `ExecutionLedger.reserve_and_mark` as the domain made it. Its
# `observed_at` is taken before the observation: orders placed since may be missing from it.
Hold = Exposure


@dataclass(frozen=True)
class Observed:
    """What the venue says about the attempt."""

    status: str  # accepted, resting, partially_filled, filled, rejected, cancelled, sent
    detail: dict[str, Any] = field(default_factory=dict)
    working: bool = False  # something still works on the venue: keep looking
    holds_exposure: bool = False  # it filled or works: the reservation turns into it
    # it settles its stage, so the proposer hears of it (once per stage): a terminal status,
    # or an unknown people must know of; not while the order itself still works (a filled
    # order whose protective children still work has concluded)
    concludes: bool = True


class SubmissionUnknown(Exception):
    """The submission may or may not have reached the venue."""


class Unresolvable(Exception):
    """Looking up cannot settle the unknown any more; people must (the reason says why)."""


class Runner(Protocol):
    kind: str
    executor_name: str
    executor_revision: str
    enabled: bool

    async def prepare(self, op: Operation) -> Refusal | Hold | None:
        """Preflight against a fresh observation; the exposure to reserve, if any."""
        ...

    async def submit(self, op: Operation, client_id: str) -> Observed:
        """Dispatch the one attempt; SubmissionUnknown if the answer is ambiguous."""
        ...

    async def lookup(
        self, op: Operation, client_id: str, dispatched_at: datetime | None
    ) -> Observed | None:
        """What the venue knows of `client_id`; None if it never received it."""
        ...
