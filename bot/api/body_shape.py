"""A proposal body's shape, before any schema: floats and control characters, by path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kernel.canonical import float_paths
from kernel.problems import FieldProblem
from workers.domains.types import is_control


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key, f"{path}.{key}" if path else str(key))
            yield from _strings(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def shape_problems(body: Any, free_text: frozenset[str]) -> list[FieldProblem]:
    """Floats and control characters anywhere in the body, named by path."""
    problems = [
        FieldProblem(
            path,
            f"JSON number {literal} is a float (or NaN/Infinity)",
            'send decimal numbers as strings, e.g. "0.5"',
        )
        for path, literal in float_paths(body)
    ]
    allowed = {f"payload.{name}" for name in free_text}
    for path, text in _strings(body, ""):
        if path not in allowed and any(is_control(ch) for ch in text):
            problems.append(
                FieldProblem(
                    path,
                    "contains control or bidirectional-override characters",
                    "remove them; only payload text fields may carry free text",
                )
            )
    return sorted(set(problems), key=lambda p: p.field)
