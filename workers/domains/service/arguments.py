"""An action's arguments against its JSON Schema (draft 2020-12): every problem named by its
path, the card's terms in schema order with the schema's titles, and the amount (pure).

Besides the standard keywords a schema may use:
- `"format": "decimal"` on a string: a plain decimal ("12.50"; floats never reach countersign),
  bounded by `"x-minimum"` / `"x-maximum"` (decimal strings, inclusive);
- `"x-amount": true` with `"x-currency": "USD"` on one required top-level property (an integer
  or a decimal string): the amount at stake, for approval rules by amount;
- `"x-title-zh"`: the Chinese label of a property (default: its `title`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import jsonschema

from kernel.canonical import canonical_json
from kernel.problems import FieldProblem
from workers.domains.base import Amount
from workers.domains.types import DECIMAL_TEXT, MAX_DECIMAL_CHARS
from workers.domains.words import Said

ARGUMENT_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
# how much of a value an error message quotes
QUOTE_CHARS = 80
TERM_PREFIX = "arguments."


def is_decimal(value: object) -> bool:
    return not isinstance(value, str) or (
        len(value) <= MAX_DECIMAL_CHARS and DECIMAL_TEXT.match(value) is not None
    )


def _decimal(value: object) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    if isinstance(value, str) and not (is_decimal(value) and value):
        return None
    try:
        return Decimal(value)
    except InvalidOperation:
        return None


def _bound(name: str, below: bool) -> Any:
    def check(validator: Any, bound: Any, instance: Any, schema: Any) -> Iterator[Any]:
        value, limit = _decimal(instance), _decimal(bound)
        if value is None or limit is None or not isinstance(instance, str):
            return
        if (value < limit) if below else (value > limit):
            side = "below the minimum" if below else "above the maximum"
            yield jsonschema.ValidationError(f"{instance} is {side} {bound}")

    return check


FORMATS = jsonschema.FormatChecker()
FORMATS.checks("decimal")(is_decimal)
# the stubs leave `extend` untyped; it returns a validator class like Draft202012Validator
Validator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft202012Validator,
    {"x-minimum": _bound("x-minimum", below=True), "x-maximum": _bound("x-maximum", below=False)},
)


def _path(parts: Sequence[object]) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in parts)


def _quote(value: object) -> str:
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= QUOTE_CHARS else shown[: QUOTE_CHARS - 1] + "…"


def properties(schema: Mapping[str, Any]) -> dict[str, Any]:
    found = schema.get("properties")
    return dict(found) if isinstance(found, dict) else {}


# -- the config's schemas ------------------------------------------------------------------


def schema_problems(schema: Mapping[str, Any], where: str) -> list[FieldProblem]:
    """What keeps `schema` from being an action's arguments schema (`where`: its field)."""
    try:
        Validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        return [FieldProblem(where, f"is not a valid JSON Schema: {error.message}", "fix it")]
    problems = []
    fields = properties(schema)
    if schema.get("type") != "object" or not fields:
        problems.append(
            FieldProblem(
                where,
                'must describe an object with its properties (type = "object", properties)',
                "declare every argument under `properties`: the card shows each one",
            )
        )
    for name, spec in fields.items():
        if re.fullmatch(ARGUMENT_NAME, name) is None:
            problems.append(
                FieldProblem(
                    f"{where}.properties.{name}",
                    "is not an argument name (letters, digits and _, at most 64)",
                    "rename it",
                )
            )
        if isinstance(spec, dict) and not isinstance(spec.get("title"), str):
            problems.append(
                FieldProblem(
                    f"{where}.properties.{name}",
                    "has no title: the card labels each argument with its title",
                    f'add title = "..." (and "x-title-zh" for Chinese readers) to {name}',
                )
            )
    amounts = [
        name for name, spec in fields.items() if isinstance(spec, dict) and spec.get("x-amount")
    ]
    if len(amounts) > 1:
        problems.append(
            FieldProblem(where, f"marks {', '.join(amounts)} as the amount", "mark one argument")
        )
    for name in amounts[:1]:
        problems += _amount_problems(schema, name, f"{where}.properties.{name}")
    return problems


def _amount_problems(schema: Mapping[str, Any], name: str, where: str) -> list[FieldProblem]:
    spec = properties(schema)[name]
    problems = []
    decimal = spec.get("type") == "string" and spec.get("format") == "decimal"
    if spec.get("type") != "integer" and not decimal:
        problems.append(
            FieldProblem(
                where,
                "is marked x-amount but is neither an integer nor a decimal string",
                'make it type = "integer", or type = "string" with format = "decimal"',
            )
        )
    currency = spec.get("x-currency")
    if not isinstance(currency, str) or not (2 <= len(currency) <= 12 and currency.isalnum()):
        problems.append(
            FieldProblem(where, "is marked x-amount without x-currency", 'add "x-currency" = "USD"')
        )
    if name not in (schema.get("required") or []):
        problems.append(
            FieldProblem(
                where,
                "is the amount but not required: approval rules by amount need it",
                f'add "{name}" to `required`',
            )
        )
    return problems


# -- a proposal's arguments -----------------------------------------------------------------


def argument_problems(
    schema: Mapping[str, Any], arguments: Mapping[str, Any]
) -> list[FieldProblem]:
    """Every way `arguments` misses the schema, each named `payload.arguments.<path>`."""
    base = "payload.arguments"
    problems: list[FieldProblem] = []
    declared = properties(schema)
    for name in arguments:
        if name not in declared:
            problems.append(
                FieldProblem(
                    f"{base}.{name}",
                    "is not an argument of this action",
                    f"remove it; the arguments are: {', '.join(declared) or 'none'}",
                )
            )
    validator = Validator(schema, format_checker=FORMATS)
    for error in sorted(
        validator.iter_errors(dict(arguments)), key=lambda e: list(map(str, e.absolute_path))
    ):
        problems += _problem(error, base, schema)
    unique = {(p.field, p.reason): p for p in problems}
    return sorted(unique.values(), key=lambda p: p.field)


def _problem(error: Any, base: str, schema: Mapping[str, Any]) -> list[FieldProblem]:
    at = base + _path(list(error.absolute_path))
    kind = error.validator
    if kind == "required":
        missing = [
            n
            for n in error.validator_value
            if isinstance(error.instance, dict) and n not in error.instance
        ]
        return [FieldProblem(f"{at}.{name}", "is required", "add it") for name in missing]
    if kind == "additionalProperties":
        return []  # named one by one above (top level) or by the path below
    if kind == "type":
        expected = error.validator_value
        fix = f"send a{'n' if str(expected)[0] in 'aeiou' else ''} {expected}"
        if expected in ("number", "integer"):
            fix += " (decimals go as strings where the schema says format decimal)"
        return [FieldProblem(at, f"{_quote(error.instance)} is not of type {expected}", fix)]
    if kind == "enum":
        allowed = ", ".join(_quote(v) for v in error.validator_value)
        return [
            FieldProblem(at, f"{_quote(error.instance)} is not allowed", f"use one of: {allowed}")
        ]
    if kind == "format" and error.validator_value == "decimal":
        return [
            FieldProblem(
                at,
                f"{_quote(error.instance)} is not a plain decimal",
                'send a decimal string such as "12.50" (no exponent, no spaces)',
            )
        ]
    if kind == "pattern":  # never the pattern itself: words, from the schema where it has some
        described = error.schema.get("description") if isinstance(error.schema, dict) else None
        fix = (
            f"send it as the action's schema describes it: {described}"
            if described
            else ("send a value in the form the action's schema describes")
        )
        return [FieldProblem(at, f"{_quote(error.instance)} is not in the form it needs", fix)]
    message = str(error.message)
    if len(message) > 2 * QUOTE_CHARS:
        message = message[: 2 * QUOTE_CHARS - 1] + "…"
    return [FieldProblem(at, message, f"send a value the action's schema allows ({kind})")]


def argument_terms(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The card's terms: each given argument in schema order, labelled with its title."""
    found = []
    for name, spec in properties(schema).items():
        if name not in arguments:
            continue
        spec = spec if isinstance(spec, dict) else {}
        title = _text(spec.get("title"), name)
        zh = _text(spec.get("x-title-zh"), title)
        value = arguments[name]
        if not isinstance(value, str | int | bool):  # nested: shown whole, as JSON
            value = canonical_json(value)
        if spec.get("x-amount") and isinstance(spec.get("x-currency"), str):
            value = f"{value} {spec['x-currency']}"
        found.append(
            {"name": TERM_PREFIX + name, "value": value, "label": Said(title, zh).as_json()}
        )
    return found


def _text(value: object, default: str) -> str:
    return value if isinstance(value, str) else default


def amount(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> Amount | None:
    """The amount the call moves, if its action marks one (a value that does not parse:
    unknown, so rules by amount apply)."""
    for name, spec in properties(schema).items():
        if isinstance(spec, dict) and spec.get("x-amount"):
            currency = str(spec.get("x-currency") or "")
            return Amount(_decimal(arguments.get(name)), currency)
    return None
