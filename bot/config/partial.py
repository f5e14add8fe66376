"""What the cross-field checks may still judge when the schema refused part of a file.

`partial_settings` reads the file's data as Settings anyway, keeping every table, list item
and key where it is, with each value the schema refused (or left missing, or a misspelt key
was meant for) replaced by `Invalid`. Any use of an `Invalid` (truth, comparison, hashing,
iteration, formatting, an attribute) raises `InvalidRead`, which stops the check reading it:
what it found before that follows from valid values only, and a problem that would follow
from the invalid value (an empty `tenant_keys` under a misspelt `mode`) is never reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from types import NoneType, UnionType
from typing import Annotated, Any, NoReturn, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError

from bot.config.validation import Loc, clean_loc, intended_locs

M = TypeVar("M", bound=BaseModel)


class InvalidRead(BaseException):
    """A check used a value the schema refused. A BaseException, so that no `except
    Exception` in a check or a domain's hook mistakes it for a problem of its own."""


def _refuse(*_args: object) -> NoReturn:
    raise InvalidRead


# every way a check can use a value; `is None` alone tells nothing and stays possible
_USES = (
    "__bool__ __len__ __iter__ __contains__ __hash__ __eq__ __ne__ __lt__ __le__ __gt__ "
    "__ge__ __str__ __repr__ __format__ __getattr__ __getitem__ __call__ __index__ __int__ "
    "__float__ __add__ __radd__ __sub__ __mul__ __truediv__ __fspath__ __reversed__"
).split()
_ABSENT = object()  # a key the file does not have
Invalid: type = type("Invalid", (), {"__slots__": (), **{use: _refuse for use in _USES}})


def invalid_model(model: type[M]) -> M:
    """A model none of whose fields may be read (a table refused as a whole)."""
    return model.model_construct(**{name: Invalid() for name in model.model_fields})


def partial_settings(model: type[M], data: Mapping[str, Any], error: ValidationError) -> M:
    locs = [clean_loc(item["loc"]) for item in error.errors(include_url=False)]
    return _partial(model, data, [*locs, *intended_locs(error, model)])


def _partial(model: type[M], data: object, errors: Sequence[Loc]) -> M:
    """`data` as `model`, each value under an error location replaced by `Invalid`."""
    if not isinstance(data, Mapping) or () in errors:
        return invalid_model(model)  # not a table, or refused as a whole (a model validator)
    tables = getattr(model, "table_models", None)
    if callable(tables):  # [domains]: each table its own model
        given: dict[str, Any] = {}
        for name, table in tables().items():
            under = _under(errors, name)
            if under:  # refused, or meant by a misspelling
                given[name] = _value(table, data.get(name, _ABSENT), under)
            elif name in data:
                given[name] = _validated(table, data[name])
        return model.model_construct(**given)
    values: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        key = field.alias or name
        under = _under(errors, key) + _under(errors, name) if key != name else _under(errors, key)
        raw = data.get(key, data.get(name, _ABSENT))
        if raw is _ABSENT and not under and not field.is_required():
            continue  # its default, as validation gives it
        if raw is _ABSENT or under:  # missing, meant by a misspelling, or refused
            values[name] = _value(field.annotation, raw, under or [()])
        else:
            values[name] = _valid(model, name, raw)
    return model.model_construct(**values)


def _under(errors: Sequence[Loc], part: int | str) -> list[Loc]:
    return [loc[1:] for loc in errors if loc[:1] == (part,)]


def _value(annotation: Any, raw: object, errors: Sequence[Loc]) -> Any:
    """A value with errors under it: a table or list of tables keeps its valid parts."""
    if () in errors or raw is _ABSENT:
        whole = _strip(annotation)
        if isinstance(whole, type) and issubclass(whole, BaseModel):
            return invalid_model(whole)
        return Invalid()
    item = _list_item_model(annotation)
    if item is not None and isinstance(raw, list):
        return [
            _partial(item, each, _under(errors, index))
            if _under(errors, index)
            else _validated(item, each)
            for index, each in enumerate(raw)
        ]
    whole = _strip(annotation)
    if isinstance(whole, type) and issubclass(whole, BaseModel):
        return _partial(whole, raw, errors)
    return Invalid()  # a scalar, or a list of them: the whole value


def _strip(annotation: Any) -> Any:
    """Without Annotated and without `| None`."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, UnionType):
            members = [arg for arg in get_args(annotation) if arg is not NoneType]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def _list_item_model(annotation: Any) -> type[BaseModel] | None:
    stripped = _strip(annotation)
    if get_origin(stripped) is not list:
        return None
    item = _strip(get_args(stripped)[0])
    return item if isinstance(item, type) and issubclass(item, BaseModel) else None


def _validated(model: type[M], raw: object) -> M:
    """A table or list item the schema accepted, as validated."""
    try:
        return model.model_validate(raw)
    except ValidationError:
        return invalid_model(model)  # accepted only with its neighbours: judge nothing


def _valid(model: type[BaseModel], name: str, raw: object) -> Any:
    """A value the schema accepted, as validated (nested models, coerced numbers)."""
    try:
        return _adapter(model, name).validate_python(raw)
    except ValidationError:
        return Invalid()  # judged with its neighbours (a model validator): judge nothing


@cache
def _adapter(model: type[BaseModel], name: str) -> TypeAdapter[Any]:
    field = model.model_fields[name]
    annotated: Any = Annotated[field.annotation, field]  # the field's constraints too
    return TypeAdapter(annotated)
