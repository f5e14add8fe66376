"""Control API routes that act on a card as a user would: click a button (push
card.action.trigger and apply the answer as Lark does, or refuse a click Lark's client never
sends), hold a card locked against PATCH, and forward a card into another chat.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from aiohttp import web

from larksandbox import answers, cardcheck, events, forms
from larksandbox.control_requests import (
    HUB_KEY,
    fail,
    find_chat,
    find_message,
    find_user,
    message_view,
    origin_of,
    owner_app,
    request_json,
    request_state,
)
from larksandbox.entities import Click, Message, User
from larksandbox.state import (
    CLICK_MAX_AGE_V1,
    CLICK_MAX_AGE_V2,
    PATCH_MAX_AGE,
    SandboxState,
)


async def click(request: web.Request) -> web.Response:
    """Click a card button as a user: push card.action.trigger, apply the answer as Lark does."""
    state, hub = request_state(request), request.app[HUB_KEY]
    message = find_message(state, request.match_info["message_id"])
    card = message.card()
    if card is None:
        raise fail(409, "not_a_card", "only interactive messages have buttons")
    body = await request_json(request)
    operator = find_user(state, body.get("operator"))
    chat = state.chats[message.chat_id]
    if operator.open_id not in chat.members:
        raise fail(403, "not_a_member", f"operator: {operator.open_id} cannot see {chat.chat_id}")
    press = _press(card, body, operator)
    app = owner_app(state, message)
    age = state.now() - datetime.fromisoformat(origin_of(state, message).created_at)
    _check_interactive(state, message, card, age)
    dialog = press.dialog.view() if press.dialog is not None else None
    if press.dialog is not None and press.cancelled:
        return web.json_response({"sent": False, "reason": "dialog_cancelled", "dialog": dialog})
    if press.resets:  # the client puts the form's inputs back; nothing reaches the app
        return web.json_response({"sent": False, "reason": "form_reset", "dialog": dialog})
    envelope = events.card_action(
        state, app, operator, message, press.value, name=press.name, form_value=press.form_value
    )
    toast: dict[str, Any] | None = None
    changed = False
    # The card is locked against PATCH from here until the answer is applied (and a while after).
    state.interaction_started(message.message_id)
    try:
        outcome = await hub.push_callback(app, envelope)
        client_error, client_error_msg = outcome.client_error, outcome.client_error_msg
        if outcome.answer is not None:
            # judged against the card as it is now: a patch may have landed on a 1.0 card
            # (only 2.0 cards are locked while their callback runs)
            applied = answers.interpret(message.card() or card, outcome.answer)
            toast, client_error, client_error_msg = (
                applied.toast,
                applied.client_error,
                applied.client_error_msg,
            )
            # a 1.0 card clicked on day 14 to 30: the answer's card does not take effect
            if applied.card is not None and age <= PATCH_MAX_AGE:
                content = json.dumps(applied.card, ensure_ascii=False)
                state.revise(message, content, "callback", operator.open_id)
                changed = True
    finally:
        state.interaction_ended(message.message_id)
    status = outcome.status if client_error is None or outcome.status != "answered" else "error"
    record = Click(
        click_id=state.new_event_id(),
        message_id=message.message_id,
        chat_id=message.chat_id,
        operator=operator.open_id,
        value=press.value or {},
        event_id=envelope["header"]["event_id"],
        at=state.now().isoformat(),
        status=status,
        toast=toast,
        card_changed=changed,
        latency_ms=round(outcome.latency_ms, 3),
        client_error=client_error,
        client_error_msg=client_error_msg,
        name=press.name,
        form_value=press.form_value,
    )
    state.record_click(record)
    reply: dict[str, Any] = {
        "sent": True,
        "dialog": dialog,
        "form_value": press.form_value,
        "status": record.status,
        "toast": toast,
        "card_changed": changed,
        "latency_ms": record.latency_ms,
        "event_id": record.event_id,
        "transport": outcome.transport,
    }
    if client_error is not None:
        reply["client_error"] = client_error
        reply["client_error_msg"] = client_error_msg
    return web.json_response(reply)


@dataclass(frozen=True)
class _Press:
    """What a click sends once Lark's client lets it through (or why it sends nothing)."""

    value: dict[str, Any] | None
    name: str = ""
    form_value: dict[str, str] | None = None
    dialog: forms.Dialog | None = None
    cancelled: bool = False  # the operator answers the dialog with Cancel
    resets: bool = False  # a form's reset button


def _press(card: dict[str, Any], body: dict[str, Any], operator: User) -> _Press:
    """The button clicked, the form typed into it and the dialog answer, checked as Lark's
    client checks them before it sends (docs/lark-reference.md §6; larksandbox/forms.py)."""
    choice = body.get("dialog", "accept")
    if choice not in ("accept", "cancel"):
        raise fail(422, "invalid_dialog", 'dialog: "accept" (the default) or "cancel"')
    if "value" in body:
        if "form" in body or "dialog" in body:
            raise fail(
                422,
                "invalid_value",
                "value: a raw value presses no button; form and dialog need one",
            )
        if not isinstance(body["value"], dict):
            raise fail(422, "invalid_value", "value: a callback value is a JSON object")
        return _Press(body["value"])
    wanted = str(body.get("button", ""))
    button = answers.find_button(card, wanted)
    if button is None:
        names = ", ".join(b.element_id or b.name or b.text for b in answers.buttons(card)) or "none"
        raise fail(422, "unknown_button", f"button: no button {wanted!r} (buttons: {names})")
    if button.disabled:
        raise fail(409, "button_disabled", f"button: {wanted!r} is disabled; Lark sends nothing")
    if button.value is None and not (button.submits or button.resets):
        raise fail(409, "no_callback", f"button: {wanted!r} has no callback behaviour")
    if "form" in body and not (button.submits or button.resets):
        raise fail(
            422, "not_in_form", f"form: {wanted!r} is not a submit button of a form container"
        )
    confirm, form_value = button.confirm, None
    if button.submits and button.form is not None:
        try:
            form_value = forms.submitted(button.form, body.get("form"))
        except forms.FormRefused as refused:
            raise fail(422, refused.code, str(refused)) from None
        # an input's confirm shows when the form is submitted
        confirm = confirm or next((f.confirm for f in button.form.fields if f.confirm), None)
    dialog = forms.dialog_of(confirm, operator.locale)
    if dialog is None and choice == "cancel":
        raise fail(422, "no_dialog", f"dialog: {wanted!r} shows no confirm dialog to cancel")
    return _Press(
        button.value,
        button.name,
        form_value,
        dialog,
        cancelled=choice == "cancel",
        resets=button.resets,
    )


def _check_interactive(
    state: SandboxState, message: Message, card: dict[str, Any], age: timedelta
) -> None:
    """Clicks Lark's client never sends (docs/lark-reference.md §5): nothing is pushed."""
    v2 = cardcheck.is_v2(card)
    limit = CLICK_MAX_AGE_V2 if v2 else CLICK_MAX_AGE_V1
    if age > limit:
        days = limit.days
        raise fail(
            409,
            "card_expired",
            f"this card was sent more than {days} days ago ({'JSON 2.0' if v2 else 'JSON 1.0'}"
            f" cards take clicks for {days} days); Lark shows "
            f'"该卡片发送时间已超过 {days} 天，无法进行互动" and sends nothing',
        )
    config = card.get("config")
    forward_interaction = isinstance(config, dict) and config.get("enable_forward_interaction")
    if message.forwarded_from and not (
        forward_interaction is True or state.faults.forwarded_cards_interactive
    ):
        raise fail(
            409,
            "forwarded_card_not_interactive",
            "this is a forwarded copy and the card does not set "
            "config.enable_forward_interaction; Lark sends nothing (the sandbox's "
            "forwarded_cards_interactive fault lets such clicks through)",
        )


async def hold_card(request: web.Request) -> web.Response:
    """Hold a card locked against PATCH (as a click in flight does) until released."""
    state = request_state(request)
    message = find_message(state, request.match_info["message_id"])
    body = await request_json(request)
    held = body.get("hold", True)
    if not isinstance(held, bool):
        raise fail(422, "invalid_hold", "hold: true to lock the card, false to release it")
    state.hold_card(message.message_id, held)
    lock = state.card_locks[message.message_id]
    return web.json_response(
        {
            "message_id": message.message_id,
            "held": lock.held,
            "in_flight": lock.in_flight,
            "locked": state.card_locked(message.message_id),
        }
    )


async def forward(request: web.Request) -> web.Response:
    """Copy a card into another chat as a new message, as a user forwarding it would."""
    state = request_state(request)
    original = find_message(state, request.match_info["message_id"])
    body = await request_json(request)
    target = find_chat(state, str(body.get("chat_id", "")))
    by = find_user(state, body.get("by", next(iter(target.members), "")), "by")
    config = (original.card() or {}).get("config")
    if isinstance(config, dict) and config.get("enable_forward") is False:
        raise fail(409, "forward_disabled", "the card sets config.enable_forward to false")
    copy = Message(
        message_id=state.new_message_id(),
        chat_id=target.chat_id,
        msg_type=original.msg_type,
        content=original.content,
        sender_type="user",
        sender_id=by.open_id,
        created_at=state.now().isoformat(),
        forwarded_from=original.message_id,
    )
    state.add_message(copy, by.open_id)
    return web.json_response(message_view(state, copy), status=201)
