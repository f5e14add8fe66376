"""Control API under /sandbox/api: the people and tests side of the sandbox (JSON).

This module owns the routes for apps (transport, sign-in redirect URLs, raw pushes, dispatch),
users, chats, messages (list, read, a user writing text), the clock, faults, deliveries, clicks
and the web sign-in's tokens, and `add_routes`, which mounts them all. The card routes (click, lock, forward) are in
larksandbox/control_cards.py; what the routes share is in larksandbox/control_requests.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from larksandbox import events
from larksandbox.control_cards import click, forward, hold_card
from larksandbox.control_requests import (
    HUB_KEY,
    fail,
    find_chat,
    find_message,
    find_user,
    message_view,
    request_json,
    request_state,
)
from larksandbox.entities import Chat, Message, User

OPEN_ID = re.compile(r"^ou_[A-Za-z0-9_-]{1,120}$")
CHAT_ID = re.compile(r"^oc_[A-Za-z0-9_-]{1,120}$")


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
                for app in request_state(request).apps.values()
            ],
            "dispatch": hub.longconn.dispatch,
        }
    )


async def update_app(request: web.Request) -> web.Response:
    state, hub = request_state(request), request.app[HUB_KEY]
    app = state.apps.get(request.match_info["app_id"])
    if app is None:
        raise fail(404, "unknown_app", f"no app {request.match_info['app_id']!r}")
    body = await request_json(request)
    # checked first: a refused list leaves the app as it was
    urls = redirect_urls(body["redirect_urls"]) if "redirect_urls" in body else None
    scope = body.get("group_msg_scope", app.group_msg_scope)
    if not isinstance(scope, bool):
        raise fail(422, "invalid_group_msg_scope", "group_msg_scope: true or false")
    for field in ("event_url", "card_url"):
        if field in body:
            url = str(body[field] or "")
            failure = await hub.webhooks.url_verification_failure(url, app) if url else None
            if failure is not None:
                raise fail(
                    422,
                    "url_verification_failed",
                    f"{field}: {url} did not answer the challenge ({failure})",
                )
            setattr(app, field, url)
    if urls is not None or scope != app.group_msg_scope:
        app.redirect_urls = app.redirect_urls if urls is None else urls
        app.group_msg_scope = scope
        state.publish({"type": "apps"})  # saved with the state file
    return web.json_response(asdict(app))


def redirect_urls(value: Any) -> list[str]:
    """The app's registered sign-in redirect URLs: absolute http(s) URLs, matched exactly."""
    if not isinstance(value, list) or not all(isinstance(url, str) for url in value):
        raise fail(422, "invalid_redirect_urls", "redirect_urls: a list of URLs")
    for url in value:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise fail(
                422, "invalid_redirect_urls", f"redirect_urls: {url!r} is not an http(s) URL"
            )
    return list(dict.fromkeys(value))


async def disconnect_app(request: web.Request) -> web.Response:
    closed = await request.app[HUB_KEY].longconn.disconnect(request.match_info["app_id"])
    return web.json_response({"closed": closed})


async def push_raw(request: web.Request) -> web.Response:
    """Push an envelope as given over the app's transport (forged or replayed input for tests).

    `kind` "callback" waits for and returns the answer; "event" goes through the re-push schedule.
    """
    state, hub = request_state(request), request.app[HUB_KEY]
    app = state.apps.get(request.match_info["app_id"])
    if app is None:
        raise fail(404, "unknown_app", f"no app {request.match_info['app_id']!r}")
    body = await request_json(request)
    envelope = body.get("envelope")
    if not isinstance(envelope, dict) or not isinstance(envelope.get("header"), dict):
        raise fail(422, "invalid_envelope", "envelope: a schema 2.0 object with a header")
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
    hub, body = request.app[HUB_KEY], await request_json(request)
    if "mode" in body:
        if body["mode"] not in ("round_robin", "random"):
            raise fail(422, "invalid_mode", 'mode: use "round_robin" or "random"')
        hub.longconn.dispatch = body["mode"]
    if "time_scale" in body:
        scale = body["time_scale"]
        if not isinstance(scale, (int, float)) or not 0 < scale <= 1:
            raise fail(
                422,
                "invalid_time_scale",
                "time_scale: a number in (0, 1]; 0.001 turns 15 s into 15 ms",
            )
        hub.time_scale = float(scale)
    return web.json_response({"dispatch": hub.longconn.dispatch, "time_scale": hub.time_scale})


# -- users and chats --------------------------------------------------------------------------


async def list_users(request: web.Request) -> web.Response:
    return web.json_response({"items": [asdict(u) for u in request_state(request).users.values()]})


async def create_user(request: web.Request) -> web.Response:
    state, body = request_state(request), await request_json(request)
    open_id, name = str(body.get("open_id", "")), str(body.get("name", "")).strip()
    if not OPEN_ID.match(open_id):
        raise fail(422, "invalid_open_id", "open_id: must look like ou_xxx")
    if not name:
        raise fail(422, "invalid_name", "name: give the user a display name")
    if open_id in state.users:
        raise fail(409, "exists", f"user {open_id} exists")
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
    return web.json_response({"items": [asdict(c) for c in request_state(request).chats.values()]})


async def create_chat(request: web.Request) -> web.Response:
    state, body = request_state(request), await request_json(request)
    chat_id, name = str(body.get("chat_id", "")), str(body.get("name", "")).strip()
    members = body.get("members", [])
    if not CHAT_ID.match(chat_id):
        raise fail(422, "invalid_chat_id", "chat_id: must look like oc_xxx")
    if chat_id in state.chats:
        raise fail(409, "exists", f"chat {chat_id} exists")
    if not isinstance(members, list) or any(m not in state.users for m in members):
        raise fail(422, "invalid_members", "members: a list of existing users' open_ids")
    apps = body.get("apps", list(state.apps))
    chat_type = body.get("chat_type", "group")
    if chat_type not in ("group", "p2p"):
        raise fail(422, "invalid_chat_type", 'chat_type: "group" or "p2p"')
    chat = Chat(
        chat_id, name or chat_id, list(members), chat_type, [a for a in apps if a in state.apps]
    )
    state.chats[chat_id] = chat
    state.publish({"type": "chats"})
    return web.json_response(asdict(chat), status=201)


# -- messages ---------------------------------------------------------------------------------


async def chat_messages(request: web.Request) -> web.Response:
    state = request_state(request)
    chat = find_chat(state, request.match_info["chat_id"])
    items = [message_view(state, m) for m in state.messages.values() if m.chat_id == chat.chat_id]
    return web.json_response({"items": items})


async def get_message(request: web.Request) -> web.Response:
    state = request_state(request)
    return web.json_response(
        message_view(state, find_message(state, request.match_info["message_id"]))
    )


async def post_text(request: web.Request) -> web.Response:
    """A user writes in a chat; the bot gets im.message.receive_v1 when mentioned, in p2p, or
    in a group when its app holds im:message.group_msg (`group_msg_scope`)."""
    state, hub = request_state(request), request.app[HUB_KEY]
    chat = find_chat(state, request.match_info["chat_id"])
    body = await request_json(request)
    sender = find_user(state, body.get("sender"), "sender")
    text = body.get("text")
    if not isinstance(text, str) or not text.strip():
        raise fail(422, "invalid_text", "text: write something")
    if sender.open_id not in chat.members:
        raise fail(403, "not_a_member", f"sender: {sender.open_id} is not in {chat.chat_id}")
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
        app = state.apps[app_id]
        if mention or chat.chat_type == "p2p" or app.group_msg_scope:
            envelope = events.message_received(
                state, app, chat, sender, message, events.text_with_mention(text, mention)
            )
            pushed.append(hub.push_event(app, envelope).event_id)
    return web.json_response({"message_id": message.message_id, "event_ids": pushed}, status=201)


# -- clock, faults, deliveries ----------------------------------------------------------------


async def clock(request: web.Request) -> web.Response:
    state = request_state(request)
    if request.method == "POST":
        body = await request_json(request)
        advance = body.get("advance_s", 0)
        if not isinstance(advance, (int, float)) or advance < 0:
            raise fail(422, "invalid_advance", "advance_s: a non-negative number of seconds")
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
    state = request_state(request)
    if request.method == "POST":
        body = await request_json(request)
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
                    raise fail(422, "invalid_fault", f"{name}: a non-negative integer")
                setattr(state.faults, name, value)
        if "forwarded_cards_interactive" in body:
            switch = body["forwarded_cards_interactive"]
            if not isinstance(switch, bool):
                raise fail(422, "invalid_fault", "forwarded_cards_interactive: true or false")
            state.faults.forwarded_cards_interactive = switch
    return web.json_response(asdict(state.faults))


async def deliveries(request: web.Request) -> web.Response:
    hub = request.app[HUB_KEY]
    return web.json_response({"items": [asdict(d) for d in hub.deliveries.values()]})


async def list_clicks(request: web.Request) -> web.Response:
    return web.json_response({"items": [asdict(c) for c in request_state(request).clicks]})


async def list_oauth_tokens(request: web.Request) -> web.Response:
    """User access and refresh tokens issued by the web sign-in, newest last."""
    state = request_state(request)
    now = state.now_s()

    def view(grant: Any) -> dict[str, Any]:
        return {**asdict(grant), "expired": grant.expires_at <= now}

    grants = state.oauth
    return web.json_response(
        {
            "items": [view(t) for t in grants.tokens.values()],
            "refresh_tokens": [view(r) for r in grants.refresh_tokens.values()],
        }
    )


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
    r.add_get(f"{base}/oauth/tokens", list_oauth_tokens)
