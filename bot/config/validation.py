"""pydantic validation errors as field problems (field, reason, fix), in words that teach.

An unknown key gets the known key it is closest to ("did you mean 'mode'?"), a literal the
values it takes, a bound the number to use, a pattern its words (bot/config/pattern_words.py,
never a regex). A required key reported missing because it was misspelt is said once, on
the misspelling.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import get_args

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from bot.config.pattern_words import DISPLAY_NAME_PATTERN, PATTERN_WORDS, UNKNOWN_FORMAT
from kernel.problems import FieldProblem

__all__ = ["DISPLAY_NAME_PATTERN", "PATTERN_WORDS", "dotted", "problems_from"]

Loc = tuple[int | str, ...]

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
}

# bound errors: (reason, fix), formatted with the error's context
_BOUNDS = {
    "greater_than_equal": ("is below the minimum, {ge}", "use {ge} or more"),
    "greater_than": ("must be more than {gt}", "use a number above {gt}"),
    "less_than_equal": ("is above the maximum, {le}", "use {le} or less"),
    "less_than": ("must be less than {lt}", "use a number below {lt}"),
    "string_too_long": ("is too long", "shorten it to at most {max_length} characters"),
    "string_too_short": ("is too short", "use at least {min_length} characters"),
    "too_long": ("has too many items", "list at most {max_length}"),
    "too_short": ("has too few items", "list at least {min_length}"),
}


def dotted(loc: Sequence[int | str], prefix: str = "") -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path = f"{path}.{part}" if path else str(part)
    return path or "$"


def clean_loc(loc: Sequence[int | str]) -> Loc:
    """An error's location without the validator steps pydantic names in it."""
    return tuple(part for part in loc if not str(part).startswith("function-"))


def problems_from(
    error: ValidationError, prefix: str = "", model: type[BaseModel] | None = None
) -> list[FieldProblem]:
    """Each error as a problem. Given the `model` validated, an unknown key is matched
    against the keys known where it stands."""
    items = error.errors(include_url=False)
    meant = misspellings(items, model)
    intended = {(*loc[:-1], key) for loc, key in meant.items()}
    problems = []
    for item in items:
        loc = clean_loc(item["loc"])
        if item["type"] == "missing" and loc in intended:
            continue  # the misspelt key already says where it went
        reason, fix = _words(item, loc, model, meant.get(loc))
        if loc[-1:] == ("[key]",):  # a table's key, not its value ([people]'s open ids)
            loc, reason = loc[:-1], f"the key {reason}"
        problems.append(FieldProblem(dotted(loc, prefix), reason, fix))
    return problems


def _words(
    item: ErrorDetails, loc: Loc, model: type[BaseModel] | None, meant: str | None
) -> tuple[str, str]:
    kind, ctx = item["type"], item.get("ctx") or {}
    if kind == "extra_forbidden" and loc and isinstance(loc[-1], str):
        if meant is not None:
            return f"unknown key {loc[-1]!r}", f"did you mean {meant!r}?"
        known = sorted(keys_at(model, loc[:-1])) if model is not None else []
        if known:
            return f"unknown key {loc[-1]!r}", "remove it; the keys here are " + ", ".join(known)
        return f"unknown key {loc[-1]!r}", "remove it; it is not part of the schema"
    if kind == "string_pattern_mismatch":
        # The rejected value is not echoed: it may be a secret pasted in the wrong place.
        return PATTERN_WORDS.get(str(ctx.get("pattern")), UNKNOWN_FORMAT)
    if kind in ("literal_error", "enum") and "expected" in ctx:
        # TOML and JSON quote strings with ", pydantic with '
        return "is not one of the allowed values", "use " + str(ctx["expected"]).replace("'", '"')
    if kind in ("string_too_short", "too_short") and ctx.get("min_length") == 1:
        return "is empty", "give it a value" if kind == "string_too_short" else "list at least one"
    if kind in _BOUNDS:
        try:
            reason, fix = (words.format(**ctx) for words in _BOUNDS[kind])
            return reason, fix
        except (KeyError, IndexError):
            pass
    reason = str(item["msg"]).removeprefix("Value error, ")
    # a validator that knows the fix passes it in its error's context
    fix = _FIXES.get(kind) or ctx.get("fix") or "correct this value and send it again"
    return reason, str(fix)


# -- what keys a location knows ---------------------------------------------------------------


def models_in(annotation: object) -> list[type[BaseModel]]:
    """The models an annotation holds: itself, or inside Optional, list, dict, Annotated."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in models_in(arg)]


def _tables(model: type[BaseModel]) -> dict[str, type[BaseModel]] | None:
    """A model of named tables (`[domains]`) says which through `table_models()`."""
    tables = getattr(model, "table_models", None)
    return tables() if callable(tables) else None


def keys_of(model: type[BaseModel]) -> list[str]:
    tables = _tables(model)
    if tables is not None:
        return list(tables)
    return [field.alias or name for name, field in model.model_fields.items()]


def _inner(model: type[BaseModel], key: str) -> list[type[BaseModel]]:
    tables = _tables(model)
    if tables is not None:
        return [tables[key]] if key in tables else []
    for name, field in model.model_fields.items():
        if key in (name, field.alias):
            return models_in(field.annotation)
    return []


def models_at(model: type[BaseModel], loc: Loc) -> list[type[BaseModel]]:
    """The models whose keys apply at `loc` (a list's index stays at the item's model)."""
    current = [model]
    for part in loc:
        if isinstance(part, str):
            current = [inner for each in current for inner in _inner(each, part)]
    return current


def keys_at(model: type[BaseModel] | None, loc: Loc) -> set[str]:
    return {key for each in models_at(model, loc) for key in keys_of(each)} if model else set()


def misspellings(items: Sequence[ErrorDetails], model: type[BaseModel] | None) -> dict[Loc, str]:
    """loc of each unknown key -> the known key it is closest to, where one is close."""
    if model is None:
        return {}
    meant: dict[Loc, str] = {}
    for item in items:
        loc = clean_loc(item["loc"])
        if item["type"] != "extra_forbidden" or not loc or not isinstance(loc[-1], str):
            continue
        close = difflib.get_close_matches(loc[-1], sorted(keys_at(model, loc[:-1])), n=1)
        if close:
            meant[loc] = close[0]
    return meant


def intended_locs(error: ValidationError, model: type[BaseModel]) -> list[Loc]:
    """Where each misspelt key was meant to go: the value there is as good as invalid."""
    meant = misspellings(error.errors(include_url=False), model)
    return [(*loc[:-1], key) for loc, key in meant.items()]
