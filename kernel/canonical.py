"""Canonical JSON: the one byte encoding every digest is computed over.

Sorted keys, no insignificant whitespace, UTF-8, decimals as strings. Floats are
refused everywhere: a float cannot say exactly which amount the operator saw.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import accumulate
from typing import Any

from kernel.problems import FieldProblem, ProblemsFound


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


def record_json(value: Any) -> str:
    """JSON kept for the record (an envelope, an answer), never digested: compact and as
    given, by the C encoder (canonical_json walks the value in Python first, and the click
    path stores two of these per click)."""
    if isinstance(value, EncodedObject):
        return value.encoded
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class EncodedObject(dict[str, Any]):
    """A JSON object with its `record_json` text, encoded once: a click's answer is sent in
    the ack and stored for replays, and encoding a card twice was a tenth of a click's CPU.
    Complete when built; never changed after."""

    __slots__ = ("encoded",)

    def __init__(self, value: dict[str, Any]) -> None:
        super().__init__(value)
        self.encoded = json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical_digest(value: Any) -> str:
    return sha256_hex(canonical_json(value))


@dataclass(frozen=True)
class NumberLiteral:
    """A JSON number with a fraction or exponent, kept verbatim so we can refuse it by path."""

    text: str


MAX_JSON_DEPTH = 64
# An authenticated Lark envelope is parsed up to this depth (well inside Python's recursion
# limit), so a click nested deeper than consumers store is refused and recorded as malformed
# rather than dropped by the transport; only deeper still is it unparseable.
MAX_ENVELOPE_DEPTH = 512
_OPENERS = {"[": 1, "{": 1, "]": -1, "}": -1}
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")


def _as_text(raw: str | bytes) -> str:
    # as json.loads decodes bytes (UTF-8/16/32); bytes it would refuse still have a depth
    return raw if isinstance(raw, str) else raw.decode(json.detect_encoding(raw), "replace")


def nesting_depth(raw: str | bytes) -> int:
    """How deep arrays and objects nest in a JSON text, without parsing it (linear, no
    recursion), so a deep body is refused before a recursive parser ever sees it."""
    text = _as_text(raw)
    # Escapes are pairs read left to right: drop escaped backslashes, then escaped quotes;
    # every quote left delimits a string, and the brackets outside strings are structure.
    bare = text.replace("\\\\", "").replace('\\"', "")
    structure = _NOT_BRACKETS.sub("", "".join(bare.split('"')[0::2]))
    return max(accumulate(map(_OPENERS.__getitem__, structure)), default=0)


def too_deep(raw: str | bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True if `raw` nests deeper than `limit`; cheap when it has few brackets at all."""
    text = _as_text(raw)
    if text.count("[") + text.count("{") <= limit:
        return False
    return nesting_depth(text) > limit


def _path(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def _has_surrogate(text: str) -> bool:
    # a lone surrogate (paired escapes are joined by the parser) cannot be encoded as UTF-8
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_SURROGATE_FIX = "send valid Unicode: a \\ud800-\\udfff escape only as half of a pair"


def _refuse(field: str, reason: str, fix: str) -> ProblemsFound:
    return ProblemsFound([FieldProblem(field, reason, fix)], code="invalid_json")


class _Pairs(list[tuple[str, Any]]):
    """An object's members in order, before we know its path (see `_checked`)."""


def _checked(value: Any, path: str) -> Any:
    if isinstance(value, _Pairs):
        result: dict[str, Any] = {}
        for key, item in value:
            if _has_surrogate(key):
                shown = key.encode("utf-8", "backslashreplace").decode("utf-8")
                raise _refuse(
                    _path(path, shown), "the key has a lone UTF-16 surrogate", _SURROGATE_FIX
                )
            where = _path(path, key)
            if key in result:
                raise _refuse(
                    where,
                    f"key {key!r} appears twice in the same object",
                    "send each key once; which value is meant would be a guess",
                )
            result[key] = _checked(item, where)
        return result
    if isinstance(value, list):
        return [_checked(item, f"{path}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, str) and _has_surrogate(value):
        raise _refuse(path or "$", "contains a lone UTF-16 surrogate", _SURROGATE_FIX)
    return value


def loads_strict(text: str | bytes) -> Any:
    """Parse JSON, keeping floats, NaN and Infinity as `NumberLiteral` markers.

    Nothing is converted to float, so callers can name the offending path. Refused, as
    ProblemsFound("invalid_json") naming the path (a JSONDecodeError for what is not JSON):
    nesting deeper than MAX_JSON_DEPTH (checked before parsing), a key twice in one object,
    and lone surrogates, which no UTF-8 store or digest could encode.
    """
    if too_deep(text):
        raise _refuse(
            "$",
            f"arrays and objects nest deeper than {MAX_JSON_DEPTH} levels",
            f"flatten the body to at most {MAX_JSON_DEPTH} levels",
        )
    try:
        parsed = json.loads(
            text, parse_float=NumberLiteral, parse_constant=NumberLiteral, object_pairs_hook=_Pairs
        )
    except RecursionError:  # a safety net only: too_deep has already refused such a body
        raise _refuse("$", "nests too deep", "flatten the body") from None
    return _checked(parsed, "")


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
