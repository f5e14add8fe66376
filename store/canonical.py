"""Canonical JSON: the one byte encoding every digest is computed over.

Sorted keys, no insignificant whitespace, UTF-8, decimals as strings. Floats are
refused everywhere: a float cannot say exactly which amount the operator saw.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any


class FloatRefused(TypeError):
    """A float (or NaN/Infinity) reached canonical encoding."""


def _to_canonical(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise FloatRefused(f"non-finite decimal {value!s} cannot be canonical")
        return format(value, "f")
    if isinstance(value, float):
        raise FloatRefused("floats are not allowed in canonical JSON; use decimal strings")
    if isinstance(value, Mapping):
        return {str(k): _to_canonical(v) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [_to_canonical(v) for v in value]
    raise TypeError(f"{type(value).__name__} is not canonical-JSON encodable")


def canonical_json(value: Any) -> str:
    """Encode `value` canonically; Decimal becomes its plain decimal string."""
    return json.dumps(
        _to_canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical_digest(value: Any) -> str:
    return sha256_hex(canonical_json(value))


@dataclass(frozen=True)
class NumberLiteral:
    """A JSON number with a fraction or exponent, kept verbatim so we can refuse it by path."""

    text: str


def loads_strict(text: str | bytes) -> Any:
    """Parse JSON, keeping floats, NaN and Infinity as `NumberLiteral` markers.

    Nothing is converted to float, so callers can name the offending path.
    """
    return json.loads(text, parse_float=NumberLiteral, parse_constant=NumberLiteral)


def float_paths(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Yield (dotted path, literal) for every float/NaN/Infinity literal in `value`."""
    if isinstance(value, NumberLiteral):
        yield path or "$", value.text
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from float_paths(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from float_paths(item, f"{path}[{index}]")
