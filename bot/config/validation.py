"""pydantic validation errors as field problems (field, reason, fix)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from kernel.problems import FieldProblem

_FIXES = {
    "missing": "add this field",
    "extra_forbidden": "remove this field; it is not part of the schema",
    "string_type": "send a JSON string",
    "bool_type": "send JSON true or false",
    "int_type": "send a JSON integer",
    "dict_type": "send a JSON object",
    "model_type": "send a JSON object",
    "list_type": "send a JSON array",
    "literal_error": "use one of the allowed values",
    "enum": "use one of the allowed values",
    "string_pattern_mismatch": "use the documented format for this field",
    "string_too_long": "shorten it",
    "string_too_short": "make it longer",
    "greater_than_equal": "raise it to the minimum",
    "less_than_equal": "lower it to the maximum",
}


# a display name ([people]): one line that cannot format or mention in a card's markdown
DISPLAY_NAME_PATTERN = r"^[^\x00-\x1f\x7f<>*_~`\[\]|\\#]+$"

# The formats people meet most, said in words (reason, fix) instead of as a regex.
PATTERN_WORDS = {
    DISPLAY_NAME_PATTERN: (
        "is not a plain display name",
        "use 1 to 64 characters, no control characters and none of < > * _ ~ ` [ ] | \\ #",
    ),
    r"^ou_[A-Za-z0-9_-]{1,120}$": (
        "is not a Lark user open_id",
        "use the user's open_id, which starts with ou_",
    ),
    r"^oc_[A-Za-z0-9_-]{1,120}$": (
        "is not a Lark chat id",
        "use the chat's chat_id, which starts with oc_",
    ),
    r"^[A-Z_][A-Z0-9_]{0,127}$": (
        "is not an environment variable name",
        "use capital letters, digits and _, not starting with a digit",
    ),
    r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$": (
        "is not a valid name",
        "use up to 64 letters, digits and _ . : -, starting with a letter or digit",
    ),
}


def dotted(loc: Sequence[int | str], prefix: str = "") -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path = f"{path}.{part}" if path else str(part)
    return path or "$"


def problems_from(error: ValidationError, prefix: str = "") -> list[FieldProblem]:
    problems = []
    for item in error.errors(include_url=False):
        reason = str(item["msg"]).removeprefix("Value error, ")
        fix = None
        if item["type"] == "string_pattern_mismatch":
            # The rejected value is not echoed: it may be a secret pasted in the wrong place.
            pattern = item["ctx"]["pattern"]
            reason, fix = PATTERN_WORDS.get(
                pattern, (f"does not match the pattern {pattern}", None)
            )
        loc = [part for part in item["loc"] if not str(part).startswith("function-after")]
        # a validator that knows the fix passes it in its error's context
        fix = fix or _FIXES.get(item["type"]) or (item.get("ctx") or {}).get("fix")
        problems.append(
            FieldProblem(dotted(loc, prefix), reason, fix or "correct this value and send it again")
        )
    return problems
