"""Control API under /sandbox/api: the people and tests side of the sandbox (JSON)."""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from larksandbox import answers, cardcheck, events
from larksandbox.hub import Hub
from larksandbox.openapi import STATE_KEY
from larksandbox.state import (
    CLICK_MAX_AGE_V1,
    CLICK_MAX_AGE_V2,
    PATCH_MAX_AGE,
    App,
    Chat,
    Click,
    Message,
    SandboxState,
    User,
)

HUB_KEY = web.AppKey("sandbox_hub", Hub)
OPEN_ID = re.compile(r"^ou_[A-Za-z0-9_-]{1,120}$")
CHAT_ID = re.compile(r"^oc_[A-Za-z0-9_-]{1,120}$")


class ControlError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def _fail(status: int, code: str, message: str) -> ControlError:
    return ControlError(status, code, message)


@web.middleware
async def control_errors(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        response: web.StreamResponse = await handler(request)
        return response
    except ControlError as error:
        return web.json_response(
            {"error": {"code": error.code, "message": str(error)}}, status=error.status
        )


def _state(request: web.Request) -> SandboxState:
    return request.app[STATE_KEY]


async def _json(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json() if request.can_read_body else {}
    except ValueError:
        raise _fail(400, "invalid_json", "the body is not JSON") from None
    if not isinstance(body, dict):
        raise _fail(400, "invalid_json", "the body must be a JSON object")
    return body


def _user(state: SandboxState, open_id: Any, field: str = "operator") -> User:
    user = state.users.get(str(open_id))
    if user is None:
        raise _fail(
            422, "unknown_user", f"{field}: no user {open_id!r}; create it under /sandbox/api/users"
        )
    return user


def _chat(state: SandboxState, chat_id: str) -> Chat:
    chat = state.chats.get(chat_id)
    if chat is None:
        raise _fail(404, "unknown_chat", f"no chat {chat_id!r}")
    return chat


def _message(state: SandboxState, message_id: str) -> Message:
    message = state.messages.get(message_id)
    if message is None:
        raise _fail(404, "unknown_message", f"no message {message_id!r}")
    return message


def _origin(state: SandboxState, message: Message) -> Message:
    """The message an app sent, for a forwarded copy (of a copy...) of it."""
    origin = message
    while origin.forwarded_from:
        origin = state.messages[origin.forwarded_from]
    return origin


def _owner_app(state: SandboxState, message: Message) -> App:
    """The app that receives callbacks for a card: its sender, also for forwarded copies."""
    app = state.apps.get(_origin(state, message).sender_id)
    if app is None:
        raise _fail(409, "not_a_card", "this message was not sent by an app")
    return app


def message_view(state: SandboxState, message: Message) -> dict[str, Any]:
    view = asdict(message)
    view["card"] = message.card()
    view["clicks"] = [asdict(c) for c in state.clicks if c.message_id == message.message_id]
    view["locked"] = state.card_locked(message.message_id)
    view["refused_patches"] = list(state.patch_refusals.get(message.message_id, ()))
    sender = state.users.get(message.sender_id)
    view["sender_name"] = (
        sender.name
        if sender
        else state.apps[message.sender_id].name
        if message.sender_id in state.apps
        else message.sender_id
    )
    return view


# -- apps -------------------------------------------------------------------------------------


async def list_apps(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    return web.json_response(
        {
            "items": [
                {
                    **asdict(app),
                    "connections": hub.longconn.connected(app.app_id),
                    "callback_transport": hub.transport(app, callback=True),
                    "event_transport": hub.transport(app, callback=False),
                }
                for app in _state(request).apps.values()
            ],
            "dispatch": hub.longconn.dispatch,
        }
    )


async def update_app(request: web.Request) -> web.Response:
    state, hub = _state(request), request.app[HUB_KEY]
    app = state.apps.get(request.match_info["app_id"])
    if app is None:
        raise _fail(404, "unknown_app", f"no app {request.match_info['app_id']!r}")
    body = await _json(request)
    for field in ("event_url", "card_url"):
        if field in body:
            url = str(body[field] or "")
            failure = await hub.webhooks.url_verification_failure(url, app) if url else None
            if failure is not None:
                raise _fail(
                    422,
                    "url_verification_failed",
                    f"{field}: {url} did not answer the challenge ({failure})",
                )
            setattr(app, field, url)
    return web.json_response(asdict(app))


async def disconnect_app(request: web.Request) -> web.Response:
    closed = await request.app[HUB_KEY].longconn.disconnect(request.match_info["app_id"])
    return web.json_response({"closed": closed})


async def push_raw(request: web.Request) -> web.Response:
    """Push an envelope as given over the app's transport (forged or replayed input for tests).

    `kind` "callback" waits for and returns the answer; "event" goes through the re-push schedule.
    """
    state, hub = _state(request), request.app[HUB_KEY]
    app = state.apps.get(request.match_info["app_id"])
    if app is None:
        raise _fail(404, "unknown_app", f"no app {request.match_info['app_id']!r}")
    body = await _json(request)
    envelope = body.get("envelope")
    if not isinstance(envelope, dict) or not isinstance(envelope.get("header"), dict):
        raise _fail(422, "invalid_envelope", "envelope: a schema 2.0 object with a header")
    if body.get("kind", "callback") == "event":
        delivery = hub.push_event(app, envelope)
        return web.json_response({"event_id": delivery.event_id})
    outcome = await hub.push_callback(app, envelope)
    return web.json_response(
        {
            "status": outcome.status,
            "answer": outcome.answer,
            "client_error": outcome.client_error,
            "latency_ms": round(outcome.latency_ms, 3),
        }
    )


async def set_dispatch(request: web.Request) -> web.Response:
    """How pushes are delivered: which client gets each, and how fast Lark's re-push schedule runs."""
    hub, body = request.app[HUB_KEY], await _json(request)
    if "mode" in body:
        if body["mode"] not in ("round_robin", "random"):
            raise _fail(422, "invalid_mode", 'mode: use "round_robin" or "random"')
        hub.longconn.dispatch = body["mode"]
    if "time_scale" in body:
        scale = body["time_scale"]
        if not isinstance(scale, (int, float)) or not 0 < scale <= 1:
            raise _fail(
                422,
                "invalid_time_scale",
                "time_scale: a number in (0, 1]; 0.001 turns 15 s into 15 ms",
            )
        hub.time_scale = float(scale)
    return web.json_response({"dispatch": hub.longconn.dispatch, "time_scale": hub.time_scale})


# -- users and chats --------------------------------------------------------------------------


async def list_users(request: web.Request) -> web.Response:
    return web.json_response({"items": [asdict(u) for u in _state(request).users.values()]})


async def create_user(request: web.Request) -> web.Response:
    state, body = _state(request), await _json(request)
    open_id, name = str(body.get("open_id", "")), str(body.get("name", "")).strip()
    if not OPEN_ID.match(open_id):
        raise _fail(422, "invalid_open_id", "open_id: must look like ou_xxx")
    if not name:
        raise _fail(422, "invalid_name", "name: give the user a display name")
    if open_id in state.users:
        raise _fail(409, "exists", f"user {open_id} exists")
    default_tenant = next(iter(state.apps.values())).tenant_key if state.apps else "sandbox-tenant"
    user = User(
        open_id,
        name,
        str(body.get("tenant_key") or default_tenant),
        locale=str(body.get("locale") or "en_us"),
    )
    state.users[open_id] = user
    state.publish({"type": "users"})
    return web.json_response(asdict(user), status=201)


async def list_chats(request: web.Request) -> web.Response:
    return web.json_response({"items": [asdict(c) for c in _state(request).chats.values()]})


async def create_chat(request: web.Request) -> web.Response:
    state, body = _state(request), await _json(request)
    chat_id, name = str(body.get("chat_id", "")), str(body.get("name", "")).strip()
    members = body.get("members", [])
    if not CHAT_ID.match(chat_id):
        raise _fail(422, "invalid_chat_id", "chat_id: must look like oc_xxx")
    if chat_id in state.chats:
        raise _fail(409, "exists", f"chat {chat_id} exists")
    if not isinstance(members, list) or any(m not in state.users for m in members):
        raise _fail(422, "invalid_members", "members: a list of existing users' open_ids")
    apps = body.get("apps", list(state.apps))
    chat_type = body.get("chat_type", "group")
    if chat_type not in ("group", "p2p"):
        raise _fail(422, "invalid_chat_type", 'chat_type: "group" or "p2p"')
    chat = Chat(
        chat_id, name or chat_id, list(members), chat_type, [a for a in apps if a in state.apps]
    )
    state.chats[chat_id] = chat
    state.publish({"type": "chats"})
    return web.json_response(asdict(chat), status=201)


# -- messages ---------------------------------------------------------------------------------


async def chat_messages(request: web.Request) -> web.Response:
    state = _state(request)
    chat = _chat(state, request.match_info["chat_id"])
    items = [message_view(state, m) for m in state.messages.values() if m.chat_id == chat.chat_id]
    return web.json_response({"items": items})


async def get_message(request: web.Request) -> web.Response:
    state = _state(request)
    return web.json_response(message_view(state, _message(state, request.match_info["message_id"])))


async def post_text(request: web.Request) -> web.Response:
    """A user writes in a chat; the bot gets im.message.receive_v1 when mentioned or in p2p."""
    state, hub = _state(request), request.app[HUB_KEY]
    chat = _chat(state, request.match_info["chat_id"])
    body = await _json(request)
    sender = _user(state, body.get("sender"), "sender")
    text = body.get("text")
    if not isinstance(text, str) or not text.strip():
        raise _fail(422, "invalid_text", "text: write something")
    if sender.open_id not in chat.members:
        raise _fail(403, "not_a_member", f"sender: {sender.open_id} is not in {chat.chat_id}")
    mention = bool(body.get("mention_bot", False))
    message = Message(
        message_id=state.new_message_id(),
        chat_id=chat.chat_id,
        msg_type="text",
        content=json.dumps({"text": text}, ensure_ascii=False),
        sender_type="user",
        sender_id=sender.open_id,
        created_at=state.now().isoformat(),
        mentions_bot=mention,
    )
    state.add_message(message, sender.open_id)
    pushed = []
    for app_id in chat.apps:
        if mention or chat.chat_type == "p2p":
            app = state.apps[app_id]
            envelope = events.message_received(
                state, app, chat, sender, message, events.text_with_mention(text, mention)
            )
            pushed.append(hub.push_event(app, envelope).event_id)
    return web.json_response({"message_id": message.message_id, "event_ids": pushed}, status=201)


async def click(request: web.Request) -> web.Response:
    """Click a card button as a user: push card.action.trigger, apply the answer as Lark does."""
    state, hub = _state(request), request.app[HUB_KEY]
    message = _message(state, request.match_info["message_id"])
    card = message.card()
    if card is None:
        raise _fail(409, "not_a_card", "only interactive messages have buttons")
    body = await _json(request)
    operator = _user(state, body.get("operator"))
    chat = state.chats[message.chat_id]
    if operator.open_id not in chat.members:
        raise _fail(403, "not_a_member", f"operator: {operator.open_id} cannot see {chat.chat_id}")
    if "value" in body:
        value = body["value"]
        if not isinstance(value, dict):
            raise _fail(422, "invalid_value", "value: a callback value is a JSON object")
    else:
        wanted = str(body.get("button", ""))
        button = answers.find_button(card, wanted)
        if button is None:
            names = ", ".join(b.element_id or b.text for b in answers.buttons(card)) or "none"
            raise _fail(422, "unknown_button", f"button: no button {wanted!r} (buttons: {names})")
        if button.disabled:
            raise _fail(
                409, "button_disabled", f"button: {wanted!r} is disabled; Lark sends nothing"
            )
        if button.value is None:
            raise _fail(409, "no_callback", f"button: {wanted!r} has no callback behaviour")
        value = button.value
    app = _owner_app(state, message)
    age = state.now() - datetime.fromisoformat(_origin(state, message).created_at)
    _check_interactive(state, message, card, age)
    envelope = events.card_action(state, app, operator, message, value)
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
        value=value,
        event_id=envelope["header"]["event_id"],
        at=state.now().isoformat(),
        status=status,
        toast=toast,
        card_changed=changed,
        latency_ms=round(outcome.latency_ms, 3),
        client_error=client_error,
        client_error_msg=client_error_msg,
    )
    state.record_click(record)
    reply: dict[str, Any] = {
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


def _check_interactive(
    state: SandboxState, message: Message, card: dict[str, Any], age: timedelta
) -> None:
    """Clicks Lark's client never sends (docs/lark-reference.md §5): nothing is pushed."""
    v2 = cardcheck.is_v2(card)
    limit = CLICK_MAX_AGE_V2 if v2 else CLICK_MAX_AGE_V1
    if age > limit:
        days = limit.days
        raise _fail(
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
        raise _fail(
            409,
            "forwarded_card_not_interactive",
            "this is a forwarded copy and the card does not set "
            "config.enable_forward_interaction; Lark sends nothing (the sandbox's "
            "forwarded_cards_interactive fault lets such clicks through)",
        )


async def hold_card(request: web.Request) -> web.Response:
    """Hold a card locked against PATCH (as a click in flight does) until released."""
    state = _state(request)
    message = _message(state, request.match_info["message_id"])
    body = await _json(request)
    held = body.get("hold", True)
    if not isinstance(held, bool):
        raise _fail(422, "invalid_hold", "hold: true to lock the card, false to release it")
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
    state = _state(request)
    original = _message(state, request.match_info["message_id"])
    body = await _json(request)
    target = _chat(state, str(body.get("chat_id", "")))
    by = _user(state, body.get("by", next(iter(target.members), "")), "by")
    config = (original.card() or {}).get("config")
    if isinstance(config, dict) and config.get("enable_forward") is False:
        raise _fail(409, "forward_disabled", "the card sets config.enable_forward to false")
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


# -- clock, faults, deliveries ----------------------------------------------------------------


async def clock(request: web.Request) -> web.Response:
    state = _state(request)
    if request.method == "POST":
        body = await _json(request)
        advance = body.get("advance_s", 0)
        if not isinstance(advance, (int, float)) or advance < 0:
            raise _fail(422, "invalid_advance", "advance_s: a non-negative number of seconds")
        state.clock_offset_s += float(advance)
        if "freeze" in body:
            state.frozen_at = datetime.now(UTC) if body["freeze"] else None
    return web.json_response(
        {
            "now": state.now().isoformat(),
            "offset_s": state.clock_offset_s,
            "frozen": state.frozen_at is not None,
        }
    )


async def faults(request: web.Request) -> web.Response:
    state = _state(request)
    if request.method == "POST":
        body = await _json(request)
        for name in (
            "fail_next_patches",
            "fail_patch_code",
            "latency_ms",
            "app_rate_limit_per_s",
            "lose_next_create_answers",
            "fail_next_gets",
            "card_lock_after_answer_ms",
        ):
            if name in body:
                value = body[name]
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    raise _fail(422, "invalid_fault", f"{name}: a non-negative integer")
                setattr(state.faults, name, value)
        if "forwarded_cards_interactive" in body:
            switch = body["forwarded_cards_interactive"]
            if not isinstance(switch, bool):
                raise _fail(422, "invalid_fault", "forwarded_cards_interactive: true or false")
            state.faults.forwarded_cards_interactive = switch
    return web.json_response(asdict(state.faults))


async def deliveries(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    return web.json_response({"items": [asdict(d) for d in hub.deliveries.values()]})


async def list_clicks(request: web.Request) -> web.Response:
    return web.json_response({"items": [asdict(c) for c in _state(request).clicks]})


def add_routes(app: web.Application) -> None:
    base = "/sandbox/api"
    r = app.router
    r.add_get(f"{base}/apps", list_apps)
    r.add_patch(f"{base}/apps/{{app_id}}", update_app)
    r.add_post(f"{base}/apps/{{app_id}}/disconnect", disconnect_app)
    r.add_post(f"{base}/apps/{{app_id}}/push", push_raw)
    r.add_post(f"{base}/dispatch", set_dispatch)
    r.add_get(f"{base}/users", list_users)
    r.add_post(f"{base}/users", create_user)
    r.add_get(f"{base}/chats", list_chats)
    r.add_post(f"{base}/chats", create_chat)
    r.add_get(f"{base}/chats/{{chat_id}}/messages", chat_messages)
    r.add_post(f"{base}/chats/{{chat_id}}/messages", post_text)
    r.add_get(f"{base}/messages/{{message_id}}", get_message)
    r.add_post(f"{base}/messages/{{message_id}}/click", click)
    r.add_post(f"{base}/messages/{{message_id}}/forward", forward)
    r.add_post(f"{base}/messages/{{message_id}}/lock", hold_card)
    r.add_get(f"{base}/clock", clock)
    r.add_post(f"{base}/clock", clock)
    r.add_get(f"{base}/faults", faults)
    r.add_post(f"{base}/faults", faults)
    r.add_get(f"{base}/deliveries", deliveries)
    r.add_get(f"{base}/clicks", list_clicks)
