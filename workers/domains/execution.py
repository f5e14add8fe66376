"""What the executor asks of a domain after the claim: prepare, submit, look up.

A domain's runner does the I/O with its venue (the simulated exchange, Lark); the executor
worker (`workers.executor`) owns the order of steps, the records and the crash safety, so
every domain gets the same guarantees: one attempt with a stable client id, recorded
before dispatch; ambiguity reconciled by lookup, never by submitting again.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from kernel.problems import FieldProblem
from store import Execution, Exposure, Tone
from workers.domains.words import Meaning, Said

if TYPE_CHECKING:  # an annotation only: the registry loads no SQLAlchemy (countersign mcp)
    from store import Operation

CLIENT_ID_PREFIX = "cs-"
# a task run beside the executor (or the bot) until its stop event is set: a venue's
# matching clock, a demo's loopback service
Background = Callable[[asyncio.Event], Awaitable[None]]


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


# The executor's own statuses, the same for every kind (a domain's `outcomes` add its own).
UNKNOWN = "unknown"
UNRESOLVED = "unresolved"
NOT_SUBMITTED = "not_submitted"
CORE_OUTCOMES: Mapping[str, Meaning] = {
    UNKNOWN: Meaning(
        Said("Submission unknown — reconciling", "提交结果未知 — 正在核对"), Tone.WARN, final=False
    ),
    UNRESOLVED: Meaning(
        Said("Unresolved — a person must check it", "无法自动核对 — 需要人工确认"),
        Tone.BAD,
        final=True,
    ),
    NOT_SUBMITTED: Meaning(
        Said("Not executed — it was never received", "未执行 — 对方从未收到"),
        Tone.DONE,
        final=True,
    ),
    Execution.PREFLIGHT_REJECTED.value: Meaning(
        Said("Refused by pre-check — nothing sent", "预检未通过 — 未发送"), Tone.BAD, final=True
    ),
    Execution.RESERVATION_REFUSED.value: Meaning(
        Said("Over the exposure budget — nothing sent", "超出敞口预算 — 未发送"),
        Tone.BAD,
        final=True,
    ),
}


class Runner(ABC):
    """A domain's I/O after the claim, built by its `Domain.open_runner`. The three steps
    are the executor's; the hooks below have defaults for a kind that needs none."""

    kind: str
    executor_name: str
    executor_revision: str
    enabled: bool

    @abstractmethod
    async def prepare(self, op: Operation) -> Refusal | Hold | None:
        """Preflight against a fresh observation; the exposure to reserve, if any."""

    @abstractmethod
    async def submit(self, op: Operation, client_id: str) -> Observed:
        """Dispatch the one attempt; SubmissionUnknown if the answer is ambiguous."""

    @abstractmethod
    async def lookup(
        self, op: Operation, client_id: str, dispatched_at: datetime | None
    ) -> Observed | None:
        """What the venue knows of `client_id`; None if it never received it."""

    def runs(self, executor_name: str, executor_revision: str) -> bool:
        """Whether this runner runs operations confirmed for that executor (the digest binds
        it): default, its own one executor."""
        return (executor_name, executor_revision) == (self.executor_name, self.executor_revision)

    async def capabilities(self) -> object:
        """What this runner could ever execute, read fresh (for `needs_capabilities`)."""
        return None

    async def precheck(self, payload: Mapping[str, Any]) -> list[FieldProblem]:
        """The pre-check `payload` would meet if confirmed now: [] if it passes. Reads,
        never sends; ReadingUnavailable when the outside could not be read."""
        return []

    def background(self) -> Sequence[Background]:
        """Tasks to run beside the executor until stop (a venue's matching clock)."""
        return ()

    async def close(self) -> None:  # noqa: B027 (most runners open nothing)
        """Release what the runner opened (files, connections)."""
