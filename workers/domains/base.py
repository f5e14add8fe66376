"""The small protocol every operation domain plugs in through.

Issue-2 scope: schema, projection of terms, the target reference, and admission
against configuration. Preflight, reserve, execute and reconcile join it with the
executors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from pydantic import BaseModel

from store.problems import FieldProblem


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


def terms(pairs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Ordered display terms, leaving out absent optional ones."""
    return [{"name": name, "value": value} for name, value in pairs.items() if value is not None]
