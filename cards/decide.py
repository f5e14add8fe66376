"""The card's controls while an operation waits: Confirm, and Reject in a small form. Pure.

The reject form's optional reason goes back to the proposer (Lark sends the form's fields
with the click; an empty field is a reject without one). A draft that can be steered (its
projection sets `steer`: a message draft) has "Request changes" in the same form: the text
is then the note that tells the proposer what to change, and it is required. Every button
carries the callback value that binds a click to this operation and this digest.

Confirm asks Lark's confirmation dialog (the button's `confirm {title, text}`, with the key
terms) before the click is sent when the operation is high-value (`asks_second_look`): more
than one confirmation is needed or an approval rule applied (cards/approval.py), or its
worst-case notional could not be computed (it fails closed, as the approval rules and the web's
re-sign-in do), or, when the renderer is given an amount (the web's [web] reauth_above and
reauth_currency), the notional is above it or in another currency. Reject never asks.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from cards.approval import confirm_dialog, needs_a_second_look
from cards.outcomes import plain_text
from cards.strings import Lang, i18n, text
from store import OperationView

CALLBACK_VALUE_VERSION = 1
# the reject form's reason input (bot/decide/reject_reason.py reads what it sends)
REASON_FIELD = "reason"
REASON_MAX_CHARS = 300
# the form's second submit: a reject that says on purpose it gives no reason (what was typed
# is not sent on)
WITHOUT_REASON = "reject_no_reason"


def callback_value(view: OperationView, action: str) -> dict[str, Any]:
    return {
        "op": view.id,
        "action": action,
        "digest": view.confirm_digest,
        "v": CALLBACK_VALUE_VERSION,
    }


# an amount and its currency: a notional above it (or in another currency) is high-value
Threshold = tuple[Decimal, str]


def asks_second_look(view: OperationView, above: Threshold | None = None) -> bool:
    """Whether Confirm asks Lark's dialog first (the module's rule)."""
    if needs_a_second_look(view):
        return True
    notional = view.approval.notional
    if not notional:  # nothing of value moves (a message)
        return False
    amount, _, currency = str(notional).partition(" ")
    try:
        value = Decimal(amount)
    except InvalidOperation:  # "unknown USDC": the worst case could not be computed
        return True
    if not value.is_finite():
        return True
    return above is not None and (currency != above[1] or value > above[0])


def _button(
    view: OperationView,
    action: str,
    style: str,
    lang: Lang,
    label: str | None = None,
    *,
    second_look: bool = False,
    **more: Any,
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
    dialog = confirm_dialog(view, lang, high_value=second_look) if action == "confirm" else None
    if dialog is not None:  # a second look: the key terms before the click is sent
        element["confirm"] = dialog
    return element


def _row(*buttons: dict[str, Any], element_id: str | None = None) -> dict[str, Any]:
    # flow: a button that does not fit beside the others goes to the next line whole (Lark's
    # default, none, squeezes the columns until a phone cuts "Request changes" to "Request c…")
    row: dict[str, Any] = {
        "tag": "column_set",
        "flex_mode": "flow",
        "columns": [{"tag": "column", "width": "auto", "elements": [button]} for button in buttons],
    }
    if element_id:
        row["element_id"] = element_id
    return row


def decide_elements(
    view: OperationView, lang: Lang, second_look_above: Threshold | None = None
) -> list[dict[str, Any]]:
    """Confirm (its dialog by `asks_second_look`); then the reject form: a reason input,
    Reject and Reject without reason."""
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
    if view.terms.get("steer") is True:  # a draft an operator may send back with a note
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
        _row(
            _button(
                view,
                "confirm",
                "primary_filled",
                lang,
                second_look=asks_second_look(view, second_look_above),
            ),
            element_id="decide",
        ),
        {
            "tag": "form",
            "element_id": "reject_form",
            "name": "reject_form",
            "elements": [reason, _row(*buttons)],
        },
    ]
