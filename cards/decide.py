"""The card's controls while an operation waits: Confirm, and Reject in a small form. Pure.

The reject form's optional reason goes back to the proposer (Lark sends the form's fields
with the click; an empty field is a reject without one). A draft that can be steered
(message.send) has "Request changes" in the same form: the text is then the note that tells
the proposer what to change, and it is required. Every button carries the callback
value that binds a click to this operation and this digest.
"""

from __future__ import annotations

from typing import Any

from cards.approval import confirm_dialog
from cards.outcomes import plain_text
from cards.strings import Lang, i18n, text

CALLBACK_VALUE_VERSION = 1
# the reject form's reason input (bot/ingress/reject_reason.py reads what it sends)
REASON_FIELD = "reason"
REASON_MAX_CHARS = 300
# the form's second submit: a reject that says on purpose it gives no reason (what was typed
# is not sent on)
WITHOUT_REASON = "reject_no_reason"


def callback_value(view: dict[str, Any], action: str) -> dict[str, Any]:
    return {
        "op": view["id"],
        "action": action,
        "digest": view["confirm_digest"],
        "v": CALLBACK_VALUE_VERSION,
    }


def _button(
    view: dict[str, Any], action: str, style: str, lang: Lang, label: str | None = None, **more: Any
) -> dict[str, Any]:
    label = label or action
    element: dict[str, Any] = {
        "tag": "button",
        "element_id": label,
        "type": style,
        "text": plain_text(text(f"button.{label}", lang), i18n(f"button.{label}")),
        "behaviors": [{"type": "callback", "value": callback_value(view, action)}],
        **more,
    }
    dialog = confirm_dialog(view, lang) if action == "confirm" else None
    if dialog is not None:  # a second look: the key terms before the click is sent
        element["confirm"] = dialog
    return element


def _row(*buttons: dict[str, Any], element_id: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "tag": "column_set",
        "columns": [{"tag": "column", "width": "auto", "elements": [button]} for button in buttons],
    }
    if element_id:
        row["element_id"] = element_id
    return row


def decide_elements(view: dict[str, Any], lang: Lang) -> list[dict[str, Any]]:
    """Confirm; then the reject form: a reason input, Reject and Reject without reason."""
    reason = {
        "tag": "input",
        "element_id": REASON_FIELD,
        "name": REASON_FIELD,
        "max_length": REASON_MAX_CHARS,
        "width": "fill",
        "placeholder": plain_text(text("reject.reason", lang), i18n("reject.reason")),
    }
    reject = _button(view, "reject", "danger", lang, name="reject", form_action_type="submit")
    without = _button(
        view,
        "reject",
        "default",
        lang,
        WITHOUT_REASON,
        name=WITHOUT_REASON,
        form_action_type="submit",
    )
    buttons = [reject, without]
    if view["terms"].get("steer") is True:  # a draft an operator may send back with a note
        reason["placeholder"] = plain_text(text("steer.note", lang), i18n("steer.note"))
        steer = _button(
            view,
            "request_changes",
            "default",
            lang,
            name="request_changes",
            form_action_type="submit",
        )
        buttons.insert(0, steer)
    return [
        _row(_button(view, "confirm", "primary_filled", lang), element_id="decide"),
        {
            "tag": "form",
            "element_id": "reject_form",
            "name": "reject_form",
            "elements": [reason, _row(*buttons)],
        },
    ]
