"""The small protocol every operation domain plugs in through.

Issue-2 scope: schema, projection of terms, the target reference, and admission
against configuration. Preflight, reserve, execute and reconcile join it with the
executors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Any, Protocol

from pydantic import BaseModel

from store.problems import FieldProblem


@dataclass(frozen=True)
class Amount:
    """An operation's worst-case notional, as its domain computes it at proposal time.
    `value` None: it has an amount that could not be computed (approval rules by amount then
    apply, failing closed)."""

    value: Decimal | None
    currency: str

    def text(self) -> str:
        if self.value is None:
            return f"unknown {self.currency}"
        with localcontext() as wide:  # never InvalidOperation for lack of digits
            wide.prec = max(28, self.value.adjusted() + 4)
            return f"{self.value.quantize(Decimal('0.01')):f} {self.currency}"


class Domain(Protocol):
    kind: str
    executor_name: str
    executor_revision: str
    simulated: bool
    # payload fields that may carry free text (sanitized, not refused, for control characters)
    free_text_fields: frozenset[str]
    # a new proposal for the same target replaces the open (unclaimed) one: message drafts
    supersedes_open_drafts: bool
    # proposals are admitted only against the adapter's capabilities, read by the caller
    needs_capabilities: bool

    def schema(self, version: int) -> type[BaseModel] | None: ...

    def project(self, payload: BaseModel) -> dict[str, Any]:
        """The terms an operator sees, in display order; bound into the confirm digest."""
        ...

    def target_ref(self, payload: BaseModel) -> str: ...

    def admit(self, payload: BaseModel, settings: Any) -> list[FieldProblem]:
        """Problems with this payload against the configured accounts/destinations."""
        ...

    def capability_problems(self, payload: BaseModel, capabilities: Any) -> list[FieldProblem]:
        """Problems with this payload against what the adapter could ever execute (pure)."""
        ...

    def notional(self, payload: BaseModel, settings: Any, capabilities: Any) -> Amount | None:
        """The worst-case amount at stake, for approval rules by amount (pure; None: this
        kind moves no amount)."""
        ...

    def preconditions(self, payload: BaseModel, settings: Any, reading: Any) -> dict[str, Any]:
        """What `reading` (what the caller read for this payload before filing, e.g. a
        message's baseline and the signal it answers; None: nothing) says: additions to the
        projection (`terms` appended, other keys set), or ProblemsFound with the domain's own
        code (pure)."""
        ...

    def auto_send_after_s(self, payload: BaseModel) -> int | None:
        """Seconds after filing when the draft sends itself if nobody decided (None: it
        waits for a person, the default of every kind)."""
        ...

    def filing_receipt(self, payload: BaseModel, settings: Any) -> Notice | None:
        """The line an internal chat gets when this proposal is filed (pure; None: nobody
        is told but the card's audience)."""
        ...


class ReadingUnavailable(Exception):
    """A domain's read of the outside world for a proposal (a venue observation) failed: the
    proposal cannot be checked now and may be retried; nothing about its terms is known."""


@dataclass(frozen=True)
class Notice:
    """One line for an internal chat (a draft's filing receipt): where and what."""

    chat_id: str
    text: str


def terms(pairs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Ordered display terms, leaving out absent optional ones."""
    return [{"name": name, "value": value} for name, value in pairs.items() if value is not None]
