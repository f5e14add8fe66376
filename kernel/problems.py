"""A field-level problem: what is wrong, where, and how to fix it.

Fail closed with a clear reason: docs/architecture.md §1, principle 8.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldProblem:
    field: str
    reason: str
    fix: str

    def as_json(self) -> dict[str, str]:
        return {"field": self.field, "reason": self.reason, "fix": self.fix}

    def line(self) -> str:
        return f"{self.field}: {self.reason}: {self.fix}"


class ProblemsFound(ValueError):
    """One or more field problems; nothing was changed."""

    def __init__(self, problems: list[FieldProblem], code: str = "invalid") -> None:
        super().__init__("; ".join(p.line() for p in problems))
        self.problems = problems
        self.code = code
