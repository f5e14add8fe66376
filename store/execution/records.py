"""What an executor pass records, as values: the one `Attempt` (the submission and its
client id), each `Outcome` appended, the `Observation` a pass hands
`ExecutionLedger.record_observation` to write (`store/execution/sql.py` turns it into SQL)
with what its status says, and the `FailedPass` counted when a pass raised."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from store.lifecycle import Execution
from store.vocabulary import ReservationState, Stage, Tone


@dataclass(frozen=True)
class Attempt:
    """The one submission; where it stands is the operation's execution state."""

    id: str
    operation_id: str
    client_id: str
    last_error: str | None
    dispatched_at: datetime | None = None
    resolved_at: datetime | None = None

    @classmethod
    def from_row(cls, row: Any) -> Attempt:
        return cls(
            row.id,
            row.operation_id,
            row.client_id,
            row.last_error,
            row.dispatched_at,
            row.resolved_at,
        )


@dataclass(frozen=True)
class Outcome:
    """One outcome row, with what its status says as its domain declared it when written:
    `final` (nothing more happens by itself), `tone` (store.vocabulary.Tone) and `words`
    ({"en": ..., "zh": ...})."""

    operation_id: str
    stage: str
    status: str
    detail: dict[str, Any]
    outcome_digest: str
    reconciles_digest: str | None
    observed_at: datetime | None = None
    final: bool = True
    tone: str = Tone.WARN.value
    words: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: Any) -> Outcome:
        return cls(
            row.operation_id,
            row.stage,
            row.status,
            json.loads(row.detail),
            row.outcome_digest,
            row.reconciles_digest,
            row.observed_at,
            bool(row.final),
            row.tone,
            json.loads(row.words),
        )


@dataclass(frozen=True)
class Observation:
    """What a pass learned and everything that follows from it, written by one
    `record_observation`. `status` and `concludes` are the domain's say."""

    stage: Stage
    status: str
    execution: Execution
    detail: Mapping[str, Any] = field(default_factory=dict)
    concludes: bool = True
    reconciles: str | None = None  # the digest of the outcome this one reconciles
    # the active reservation becomes CONVERTED (the venue holds the exposure now) or
    # RELEASED (nothing came of it); None keeps it held (an unknown: people or a lookup decide)
    settles: ReservationState | None = None
    look_again_in_s: float | None = None  # None: nothing left to look at
    # the venue's answer to the attempt (or why there is none): stamps resolved_at and
    # last_error on it; progress of a working order does not answer it again
    answers_attempt: bool = False
    attempt_error: str | None = None
    # the write holds only while no attempt is recorded: the store itself proves that nothing
    # was sent (an attempt is written with `dispatching`, before the request leaves)
    nothing_sent: bool = False
    # what `status` says, stored with the outcome: the domain's words ({"en", "zh"}), tone
    # and finality, stamped by the executor (`workers.domains.meaning`). Left out, it reads
    # as a status nobody declared does: the status itself, warn, final (nothing waits on it).
    words: Mapping[str, str] | None = None
    tone: Tone = Tone.WARN
    final: bool = True

    def said(self) -> dict[str, str]:
        """The words as stored: the domain's, else the status in every language."""
        if self.words is not None:
            return dict(self.words)
        words = self.status.replace("_", " ")
        return {"en": words, "zh": words}


@dataclass(frozen=True)
class FailedPass:
    """A pass that raised, as counted in the store: how many in a row, where the operation
    stands now, and whether an attempt is recorded (then something may have been sent)."""

    count: int
    execution: Execution
    attempt_recorded: bool
