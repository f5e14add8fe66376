"""Holding the typed API shapes (bot/api/wire.py) to what the API sends: a model keeps fields
it does not know, so a field the API added and the model lacks shows up here."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def unknown_fields(value: Any, path: str = "$") -> list[str]:
    """Every field, at any depth, that a model kept without knowing it."""
    found: list[str] = []
    if isinstance(value, BaseModel):
        found += [f"{path}.{name}" for name in value.model_extra or {}]
        for name in type(value).model_fields:
            found += unknown_fields(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += unknown_fields(item, f"{path}[{index}]")
    return found
