"""What every control API route shares: the hub's key on the application, the error a route
raises (`ControlError`, made by `fail`) and the middleware that answers it as JSON, reading
the state and the JSON body of a request, the lookups that fail with a 4xx (user, chat,
message, a card's origin and owner app), and `message_view`, a message as the API shows it.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from aiohttp import web

from larksandbox.entities import App, Chat, Message, User
from larksandbox.hub import Hub
from larksandbox.openapi import STATE_KEY, text_reading
from larksandbox.state import SandboxState

HUB_KEY = web.AppKey("sandbox_hub", Hub)


class ControlError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def fail(status: int, code: str, message: str) -> ControlError:
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


def request_state(request: web.Request) -> SandboxState:
    return request.app[STATE_KEY]


async def request_json(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json() if request.can_read_body else {}
    except ValueError:
        raise fail(400, "invalid_json", "the body is not JSON") from None
    if not isinstance(body, dict):
        raise fail(400, "invalid_json", "the body must be a JSON object")
    return body


def find_user(state: SandboxState, open_id: Any, field: str = "operator") -> User:
    user = state.users.get(str(open_id))
    if user is None:
        raise fail(
            422, "unknown_user", f"{field}: no user {open_id!r}; create it under /sandbox/api/users"
        )
    return user


def find_chat(state: SandboxState, chat_id: str) -> Chat:
    chat = state.chats.get(chat_id)
    if chat is None:
        raise fail(404, "unknown_chat", f"no chat {chat_id!r}")
    return chat


def find_message(state: SandboxState, message_id: str) -> Message:
    message = state.messages.get(message_id)
    if message is None:
        raise fail(404, "unknown_message", f"no message {message_id!r}")
    return message


def origin_of(state: SandboxState, message: Message) -> Message:
    """The message an app sent, for a forwarded copy (of a copy...) of it."""
    origin = message
    while origin.forwarded_from:
        origin = state.messages[origin.forwarded_from]
    return origin


def owner_app(state: SandboxState, message: Message) -> App:
    """The app that receives callbacks for a card: its sender, also for forwarded copies."""
    app = state.apps.get(origin_of(state, message).sender_id)
    if app is None:
        raise fail(409, "not_a_card", "this message was not sent by an app")
    return app


def message_view(state: SandboxState, message: Message) -> dict[str, Any]:
    view = asdict(message)
    view["card"] = message.card()
    # a text as Lark shows it: the mentions and links its markup made (None: not a text)
    reading = text_reading(state, message)
    view["text_reading"] = reading.as_json() if reading is not None else None
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
