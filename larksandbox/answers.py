"""Pure rules for card buttons and for what a callback answer does to the card."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from larksandbox import cardcheck, forms
from larksandbox.forms import Form
from larksandbox.hub import CALLBACK_BAD_BODY, CALLBACK_BAD_CARD, CARD_DOWNGRADE

TOAST_TYPES = frozenset({"info", "success", "error", "warning"})


@dataclass(frozen=True)
class Button:
    element_id: str
    text: str
    value: dict[str, Any] | None
    disabled: bool
    name: str = ""
    form_action_type: str = ""  # in a form: "submit" or "reset"
    confirm: dict[str, Any] | None = None
    form: Form | None = None  # the form container the button is in

    @property
    def submits(self) -> bool:
        return self.form is not None and self.form_action_type == "submit"

    @property
    def resets(self) -> bool:
        return self.form is not None and self.form_action_type == "reset"


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for child in node.values():
            yield from _walk(child)
    elif isinstance(node, list):
        for child in node:
            yield from _walk(child)


def _button(node: dict[str, Any], form: Form | None) -> Button:
    value = node.get("value")
    for behavior in node.get("behaviors", []) or []:
        if isinstance(behavior, dict) and behavior.get("type") == "callback":
            value = behavior.get("value")
    text = node.get("text", {})
    name, action, confirm = node.get("name"), node.get("form_action_type"), node.get("confirm")
    return Button(
        element_id=str(node.get("element_id", "")),
        text=str(text.get("content", "")) if isinstance(text, dict) else str(text),
        value=value if isinstance(value, dict) else None,
        disabled=bool(node.get("disabled", False)),
        name=name if isinstance(name, str) else "",
        form_action_type=action if isinstance(action, str) else "",
        confirm=confirm if isinstance(confirm, dict) else None,
        form=form,
    )


def buttons(card: dict[str, Any]) -> list[Button]:
    """Every button of a 2.0 card (behaviors) or a 1.0 card (value), in document order, each
    with the form container it is in."""
    found: list[Button] = []

    def visit(node: Any, form: Form | None) -> None:
        if isinstance(node, list):
            for child in node:
                visit(child, form)
            return
        if not isinstance(node, dict):
            return
        if node.get("tag") == "form":
            form = forms.read_form(node)
        elif node.get("tag") == "button":
            found.append(_button(node, form))
        for child in node.values():
            visit(child, form)

    visit(card.get("body", card.get("elements", [])), None)
    return found


def find_button(card: dict[str, Any], wanted: str) -> Button | None:
    """By element_id first, then by name, then by visible text (case-insensitive)."""
    candidates = buttons(card)
    return (
        next((b for b in candidates if b.element_id and b.element_id == wanted), None)
        or next((b for b in candidates if b.name and b.name == wanted), None)
        or next((b for b in candidates if b.text.lower() == wanted.lower()), None)
    )


@dataclass(frozen=True)
class Applied:
    toast: dict[str, Any] | None
    card: dict[str, Any] | None
    client_error: int | None = None
    client_error_msg: str = ""


def interpret(current: dict[str, Any], answer: dict[str, Any]) -> Applied:
    """What Lark's client does with a callback answer: show the toast, replace the card."""
    toast = answer.get("toast")
    if toast is not None:
        if (
            not isinstance(toast, dict)
            or toast.get("type", "info") not in TOAST_TYPES
            or not isinstance(toast.get("content", toast.get("i18n")), (str, dict))
        ):
            return Applied(None, None, CALLBACK_BAD_BODY, "the toast is malformed")
    card = answer.get("card")
    if card is None:
        return Applied(toast, None)
    if not isinstance(card, dict) or card.get("type") not in ("raw", "template"):
        return Applied(None, None, CALLBACK_BAD_CARD, 'card.type must be "raw" or "template"')
    if card["type"] == "template":
        return Applied(
            None, None, CALLBACK_BAD_CARD, "template cards are not supported by the sandbox"
        )
    data = card.get("data")
    if not isinstance(data, dict):
        return Applied(None, None, CALLBACK_BAD_CARD, "card.data must be a card JSON object")
    parsed = cardcheck.parse_card(json.dumps(data, ensure_ascii=False))
    if isinstance(parsed, cardcheck.CardProblem):
        return Applied(None, None, CALLBACK_BAD_CARD, parsed.msg)
    if cardcheck.is_v2(current) and not cardcheck.is_v2(parsed):
        return Applied(None, None, CARD_DOWNGRADE, "a JSON 2.0 card cannot be updated to JSON 1.0")
    if (problem := cardcheck.check_card(parsed)) is not None:  # 2.0 structure, as on create
        return Applied(None, None, CALLBACK_BAD_CARD, problem.msg)
    if (problem := cardcheck.replacement_problem(current, parsed)) is not None:
        return Applied(None, None, CALLBACK_BAD_CARD, problem.msg)
    return Applied(toast, parsed)
