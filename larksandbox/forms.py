"""Pure rules for what Lark's client does before it sends a click: the form a submit button
sends (`action.form_value`) and the confirm dialog a button shows.

A JSON 2.0 `form` container holds inputs and buttons; a button with `form_action_type: submit`
sends one `card.action.trigger` whose `action` carries the button's callback value, its `name`
and `form_value`: every named input of that form, by name, with the text in it (an untouched
input sends its `default_value`, an empty one ""). `reset` puts the inputs back locally and
sends nothing. Before sending, the client refuses an empty `required` input ("有必填项未填写")
and text over `max_length` (1 to 1000, default 1000). A button's `confirm {title, text}` shows
a dialog first; only Confirm sends; an input's `confirm` shows when a submit button is
clicked. Sources: docs/lark-reference.md §1.1, §6, §6.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

INPUT_MAX_LENGTH = 1000  # Lark's default and largest max_length of an input


@dataclass(frozen=True)
class Field:
    """One input of a form: what it holds untouched and what the client checks."""

    name: str
    required: bool
    max_length: int
    default: str
    disabled: bool
    confirm: dict[str, Any] | None


@dataclass(frozen=True)
class Form:
    name: str
    fields: tuple[Field, ...]


@dataclass(frozen=True)
class Dialog:
    title: str
    text: str

    def view(self) -> dict[str, str]:
        return {"title": self.title, "text": self.text}


class FormRefused(Exception):
    """What Lark's client refuses to submit: the control API answers 422 and sends nothing."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for child in node.values():
            yield from _nodes(child)
    elif isinstance(node, list):
        for child in node:
            yield from _nodes(child)


def _max_length(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= INPUT_MAX_LENGTH:
        return value
    return INPUT_MAX_LENGTH


def read_form(node: dict[str, Any]) -> Form:
    """A `form` container and the named inputs anywhere inside it (in columns too)."""
    fields: dict[str, Field] = {}
    for child in _nodes(node.get("elements", [])):
        name = child.get("name")
        if child.get("tag") != "input" or not isinstance(name, str) or not name:
            continue
        default = child.get("default_value")
        confirm = child.get("confirm")
        fields.setdefault(
            name,
            Field(
                name=name,
                required=child.get("required") is True,
                max_length=_max_length(child.get("max_length")),
                default=default if isinstance(default, str) else "",
                disabled=child.get("disabled") is True,
                confirm=confirm if isinstance(confirm, dict) else None,
            ),
        )
    name = node.get("name")
    return Form(name=name if isinstance(name, str) else "", fields=tuple(fields.values()))


def submitted(form: Form, typed: Any) -> dict[str, str]:
    """The `form_value` a submit sends when the user typed `typed` (input name -> text; an
    input not named keeps its default). Raises FormRefused for what the client refuses."""
    if typed is None:
        typed = {}
    names = ", ".join(f.name for f in form.fields) or "none"
    if not isinstance(typed, dict):
        raise FormRefused("invalid_form", "form: an object of input name -> the text typed")
    fields = {f.name: f for f in form.fields}
    for name, text in typed.items():
        field = fields.get(name)
        if field is None:
            raise FormRefused(
                "unknown_field", f"form: no input {name!r} in form {form.name!r} (inputs: {names})"
            )
        if not isinstance(text, str):
            raise FormRefused("invalid_form", f"form.{name}: the text typed is a string")
        if field.disabled:
            raise FormRefused("field_disabled", f"form.{name}: the input is disabled")
    values: dict[str, str] = {}
    for field in form.fields:
        text = typed.get(field.name, field.default)
        if len(text) > field.max_length:
            raise FormRefused(
                "value_too_long",
                f"form.{field.name}: {len(text)} characters, the input takes at most "
                f"{field.max_length} (max_length); Lark's client refuses to submit",
            )
        if field.required and text == "":
            raise FormRefused(
                "required_field_empty",
                f"form.{field.name}: required and empty; Lark's client shows "
                '"有必填项未填写" and sends nothing',
            )
        values[field.name] = text
    return values


def _shown(text: Any, locale: str) -> str:
    if isinstance(text, str):
        return text
    if not isinstance(text, dict):
        return ""
    i18n_content = text.get("i18n_content")
    if isinstance(i18n_content, dict) and isinstance(i18n_content.get(locale), str):
        return str(i18n_content[locale])
    content = text.get("content")
    return content if isinstance(content, str) else ""


def dialog_of(confirm: dict[str, Any] | None, locale: str) -> Dialog | None:
    """The dialog a `confirm {title, text}` shows, in the user's locale."""
    if confirm is None:
        return None
    return Dialog(_shown(confirm.get("title"), locale), _shown(confirm.get("text"), locale))
