"""Rules across a payload's fields, reported together with its fields' own problems.

pydantic runs a model's `after` validator only when every field validated, so an order with
a bad side and no limit_price was refused for its side alone, and the agent learned of the
price on its next try. A `CrossChecked` model's rules read the raw input whatever its fields'
results, each naming the field to change and how (the fix rides in the error's context:
bot/config/validation.py `problems_from`), so one refusal names every problem. A valid input
validates to exactly the model the fields make: the rules only ever add errors.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from pydantic import ModelWrapValidatorHandler, ValidationError, model_validator
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError, core_schema

from workers.domains.types import StrictModel

_BUILT_IN_ERRORS = frozenset(typing.get_args(core_schema.ErrorType))


@dataclass(frozen=True)
class CrossProblem:
    """A rule a payload breaks: the field to change (None: the model as a whole), why, how."""

    field: str | None
    reason: str
    fix: str


class CrossChecked(StrictModel):
    """A payload model whose `cross_problems` run on every input that is an object."""

    @classmethod
    def cross_problems(cls, data: Mapping[str, Any]) -> list[CrossProblem]:
        """The rules `data` breaks, read from the raw input (a field may be missing or of
        the wrong type: a rule speaks only of what it can read)."""
        return []

    @model_validator(mode="wrap")
    @classmethod
    def _with_cross_problems(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        if not isinstance(data, Mapping):
            return handler(data)  # a model already made, or not an object: the fields say so
        crossed = [_error(problem, data) for problem in cls.cross_problems(data)]
        if not crossed:
            return handler(data)
        try:
            handler(data)
        except ValidationError as error:
            fields = [_again(item) for item in error.errors(include_url=False)]
            raise ValidationError.from_exception_data(cls.__name__, [*fields, *crossed]) from None
        raise ValidationError.from_exception_data(cls.__name__, crossed)


def _error(problem: CrossProblem, data: Mapping[str, Any]) -> InitErrorDetails:
    loc = () if problem.field is None else (problem.field,)
    return {
        "type": PydanticCustomError("cross_field", problem.reason, {"fix": problem.fix}),
        "loc": loc,
        "input": data if problem.field is None else data.get(problem.field),
    }


def _again(item: ErrorDetails) -> InitErrorDetails:
    """A field's error as it was raised: a built-in type renders its message from its
    context again; any other keeps its message and context (a fix in it included)."""
    ctx = item.get("ctx") or {}
    if item["type"] in _BUILT_IN_ERRORS:
        again: InitErrorDetails = {"type": item["type"], "loc": item["loc"], "input": item["input"]}
        if ctx:
            again["ctx"] = ctx
        return again
    return {
        "type": PydanticCustomError(item["type"], item["msg"], ctx),
        "loc": item["loc"],
        "input": item["input"],
    }
