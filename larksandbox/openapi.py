"""The Lark OpenAPI subset the bot uses: same paths, `{code, msg, data}` envelopes, error codes.

Choices where docs/lark-reference.md says UNCONFIRMED are listed in larksandbox/README.md.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from aiohttp import web

from larksandbox import cardcheck
from larksandbox.entities import App, Chat, Message
from larksandbox.state import PATCH_MAX_AGE, SandboxState
from larksandbox.textmarkup import ALL, TextReading, read_text

STATE_KEY = web.AppKey("sandbox_state", SandboxState)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class LarkError(Exception):
    def __init__(
        self, code: int, msg: str, status: int = 400, headers: dict[str, str] | None = None
    ):
        super().__init__(msg)
        self.code = code
        self.msg = msg
        self.status = status
        self.headers = headers or {}


def ok(data: Any = None, **extra: Any) -> web.Response:
    return web.json_response(
        {"code": 0, "msg": "success", "data": data if data is not None else {}, **extra}
    )


def _state(request: web.Request) -> SandboxState:
    return request.app[STATE_KEY]


@web.middleware
async def lark_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    if not request.path.startswith("/open-apis/"):
        return await handler(request)
    try:
        return await handler(request)
    except LarkError as error:
        return web.json_response(
            {"code": error.code, "msg": error.msg, "error": {"log_id": "sandbox"}},
            status=error.status,
            headers=error.headers,
        )


async def _body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise LarkError(99992402, "field validation failed: body is not JSON") from None
    if not isinstance(body, dict):
        raise LarkError(99992402, "field validation failed: body must be an object")
    return body


async def _authorized_app(request: web.Request) -> App:
    state = _state(request)
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer ") or not header.removeprefix("Bearer ").strip():
        raise LarkError(
            99991661,
            "Missing access token for authorization. Please make a request with token attached.",
        )
    app = state.app_for_token(header.removeprefix("Bearer ").strip())
    if app is None:
        raise LarkError(
            99991663,
            "Invalid access token for authorization. Please make a request with token attached.",
        )
    if not state.allow_app_call(app.app_id):
        raise LarkError(
            99991400,
            "request trigger frequency limit",
            status=429,
            headers={
                "x-ogw-ratelimit-limit": str(state.faults.app_rate_limit_per_s),
                "x-ogw-ratelimit-reset": "1",
            },
        )
    if state.faults.latency_ms:
        await asyncio.sleep(state.faults.latency_ms / 1000)
    return app


# -- auth -------------------------------------------------------------------------------------


async def tenant_access_token(request: web.Request) -> web.Response:
    state = _state(request)
    body = await _body(request)
    app = state.apps.get(str(body.get("app_id", "")))
    if app is None:
        raise LarkError(10003, "invalid param: app_id not found")
    if body.get("app_secret") != app.app_secret:
        raise LarkError(10014, "app secret invalid")
    token = state.issue_token(app)
    expire = int((token.expires_at - state.now()).total_seconds())
    return web.json_response(
        {"code": 0, "msg": "ok", "tenant_access_token": token.token, "expire": expire}
    )


# -- messages ---------------------------------------------------------------------------------


def text_reading(state: SandboxState, message: Message) -> TextReading | None:
    """A text message as Lark shows it (its mentions and links); None for other types."""
    if message.msg_type != "text":
        return None
    try:
        text = json.loads(message.content).get("text")
    except (ValueError, AttributeError):
        return None
    names = {user.open_id: user.name for user in state.users.values()}
    return read_text(text, names) if isinstance(text, str) else None


def _mentions(state: SandboxState, message: Message) -> list[dict[str, Any]]:
    """The users a text mentions, as a message read lists them (`@_user_N` keys). Everyone
    (`all`) is not a user: it is left out here; the control API's text_reading shows it."""
    reading = text_reading(state, message)
    users = [who for who in (reading.mentions if reading else ()) if who != ALL]
    return [
        {
            "key": f"@_user_{n}",
            "id": who,
            "id_type": "open_id",
            "name": user.name if (user := state.users.get(who)) else who,
            "tenant_key": user.tenant_key if user else "",
        }
        for n, who in enumerate(users, start=1)
    ]


def message_json(state: SandboxState, message: Message) -> dict[str, Any]:
    created = str(int(_parse(message.created_at) * 1000))
    updated = str(int(_parse(message.history[-1].at) * 1000)) if message.history else created
    app = state.apps.get(message.sender_id)
    return {
        "message_id": message.message_id,
        "root_id": message.root_id,
        "parent_id": message.parent_id,
        "thread_id": "",
        "msg_type": message.msg_type,
        "create_time": created,
        "update_time": updated,
        "deleted": False,
        "updated": len(message.history) > 1,
        "chat_id": message.chat_id,
        "sender": {
            "id": message.sender_id,
            "id_type": "app_id" if message.sender_type == "app" else "open_id",
            "sender_type": message.sender_type,
            "tenant_key": app.tenant_key if app else "",
        },
        "body": {"content": message.content},
        "mentions": _mentions(state, message),
        "upper_message_id": "",
    }


def _parse(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def _visible_users(state: SandboxState, app: App) -> set[str]:
    return {user.open_id for user in state.users.values() if user.tenant_key == app.tenant_key}


async def _body_size(request: web.Request) -> int:
    """Bytes of the request body as sent: what Lark's 30 KB / 150 KB limits measure."""
    return len(await request.read())


def _refuse(problem: cardcheck.CardProblem | None) -> None:
    if problem is not None:
        raise LarkError(problem.code, problem.msg)


def _check_card(state: SandboxState, app: App, content: str, size: int) -> dict[str, Any]:
    _refuse(cardcheck.body_size_problem(size, "interactive"))
    card = cardcheck.parse_card(content, max_bytes=None)
    if isinstance(card, cardcheck.CardProblem):
        raise LarkError(card.code, card.msg)
    _refuse(cardcheck.check_card(card))
    _refuse(cardcheck.unknown_mention(card, _visible_users(state, app)))
    return card


def _check_content(state: SandboxState, app: App, msg_type: str, content: Any, size: int) -> str:
    if not isinstance(content, str):
        raise LarkError(230001, "invalid request parameter: content must be a JSON string")
    if msg_type == "text":
        _refuse(cardcheck.body_size_problem(size, "text"))
        try:
            text = json.loads(content).get("text")
        except (ValueError, AttributeError):
            text = None
        if not isinstance(text, str):
            raise LarkError(
                230001, 'invalid request parameter: text content must be {"text": "..."}'
            )
        _refuse(cardcheck.unknown_text_mention(text, _visible_users(state, app)))
        return content
    if msg_type == "interactive":
        _check_card(state, app, content, size)
        return content
    raise LarkError(
        230001, f"invalid request parameter: msg_type {msg_type!r} is not supported by the sandbox"
    )


def _target_chat(state: SandboxState, app: App, id_type: str, receive_id: str) -> Chat:
    if id_type == "chat_id":
        chat = state.chats.get(receive_id)
        if chat is None:
            raise LarkError(230001, f"invalid request parameter: chat {receive_id} not found")
        if app.app_id not in chat.apps:
            raise LarkError(230002, "The bot is not in the chat")
        return chat
    if id_type == "open_id":
        user = state.users.get(receive_id)
        if user is None:
            raise LarkError(230001, f"invalid request parameter: user {receive_id} not found")
        if user.tenant_key != app.tenant_key:
            raise LarkError(230013, "The user is not in the app's availability scope")
        chat_id = f"oc_p2p_{user.open_id.removeprefix('ou_')}"
        return state.chats.setdefault(
            chat_id, Chat(chat_id, user.name, [user.open_id], "p2p", [app.app_id])
        )
    raise LarkError(
        99992402, f"field validation failed: receive_id_type {id_type!r} is not supported"
    )


def _send(
    state: SandboxState,
    app: App,
    chat: Chat,
    body: dict[str, Any],
    parent: Message | None,
    size: int,
) -> web.Response:
    msg_type = str(body.get("msg_type", ""))
    content = _check_content(state, app, msg_type, body.get("content"), size)
    uuid = str(body.get("uuid") or "")
    if len(uuid) > 50:
        raise LarkError(230001, "invalid request parameter: uuid is longer than 50 characters")
    if (previous := state.dedupe(app.app_id, uuid)) is not None:
        return ok(message_json(state, previous))
    if not state.allow_send(chat.chat_id):
        raise LarkError(
            230020, "This operation triggers the frequency limit (5 messages/s per chat)"
        )
    message = Message(
        message_id=state.new_message_id(),
        chat_id=chat.chat_id,
        msg_type=msg_type,
        content=content,
        sender_type="app",
        sender_id=app.app_id,
        created_at=state.now().isoformat(),
        uuid=uuid,
        root_id=(parent.root_id or parent.message_id) if parent else "",
        parent_id=parent.message_id if parent else "",
    )
    state.add_message(message, app.app_id)
    if state.faults.lose_next_create_answers > 0:
        state.faults.lose_next_create_answers -= 1
        raise LarkError(
            1, "sandbox fault: the message was created but this answer was lost", status=500
        )
    return ok(message_json(state, message))


async def create_message(request: web.Request) -> web.Response:
    app = await _authorized_app(request)
    state = _state(request)
    body = await _body(request)
    id_type = request.query.get("receive_id_type", "")
    chat = _target_chat(state, app, id_type, str(body.get("receive_id", "")))
    return _send(state, app, chat, body, None, await _body_size(request))


def _message(state: SandboxState, message_id: str) -> Message:
    message = state.messages.get(message_id)
    if message is None:
        raise LarkError(230001, f"invalid request parameter: message {message_id} not found")
    return message


async def reply_message(request: web.Request) -> web.Response:
    app = await _authorized_app(request)
    state = _state(request)
    parent = _message(state, request.match_info["message_id"])
    chat = state.chats[parent.chat_id]
    if app.app_id not in chat.apps:
        raise LarkError(230002, "The bot is not in the chat")
    body = await _body(request)
    return _send(state, app, chat, body, parent, await _body_size(request))


# docs/lark-reference.md §4.3: the message-create doc's 230099 sub-code table, whose format the
# 200550 example there shows ("Failed to create card content, ext=ErrCode: N; ErrMsg: ...; ").
CARD_LOCKED_MSG = "Failed to create card content, ext=ErrCode: 11310; ErrMsg: card action is lock; "


async def patch_message(request: web.Request) -> web.Response:
    app = await _authorized_app(request)
    state = _state(request)
    message = _message(state, request.match_info["message_id"])
    body = await _body(request)
    size = await _body_size(request)
    try:
        return _patch(state, app, message, body, size)
    except LarkError as refused:  # kept per message: the control API and the UI show them
        state.refuse_patch(message, refused.code, refused.msg)
        raise


def _patch(
    state: SandboxState, app: App, message: Message, body: dict[str, Any], size: int
) -> web.Response:
    if message.sender_type != "app" or message.sender_id != app.app_id:
        raise LarkError(230027, "No permission: only the app that sent the card can update it")
    if message.msg_type != "interactive":
        raise LarkError(
            230001, "invalid request parameter: only interactive (card) messages can be patched"
        )
    if state.faults.fail_next_patches > 0:
        state.faults.fail_next_patches -= 1
        raise LarkError(state.faults.fail_patch_code, "sandbox fault: injected patch failure")
    if not state.allow_patch(message.message_id):
        raise LarkError(
            230020, "This operation triggers the frequency limit (5 updates/s per message)"
        )
    content = body.get("content")
    if not isinstance(content, str):
        raise LarkError(230001, "invalid request parameter: content must be a JSON string")
    card = _check_card(state, app, content, size)
    if state.now() - datetime.fromisoformat(message.created_at) > PATCH_MAX_AGE:
        raise LarkError(
            230031, "The message was sent more than 14 days ago and can no longer be updated"
        )
    current = message.card()
    assert current is not None
    if cardcheck.is_v2(current) and state.card_locked(message.message_id):
        raise LarkError(230099, CARD_LOCKED_MSG)
    if (problem := cardcheck.replacement_problem(current, card)) is not None:
        raise LarkError(problem.code, problem.msg)
    state.revise(message, content, "patch", app.app_id)
    return ok()


async def get_message(request: web.Request) -> web.Response:
    app = await _authorized_app(request)
    state = _state(request)
    if state.faults.fail_next_gets > 0:
        state.faults.fail_next_gets -= 1
        raise LarkError(1, "sandbox fault: injected internal error", status=500)
    message = _message(state, request.match_info["message_id"])
    if app.app_id not in state.chats[message.chat_id].apps:
        raise LarkError(230002, "The bot is not in the chat")
    return ok({"items": [message_json(state, message)]})


def add_routes(app: web.Application) -> None:
    app.router.add_post("/open-apis/auth/v3/tenant_access_token/internal", tenant_access_token)
    app.router.add_post("/open-apis/im/v1/messages", create_message)
    app.router.add_post("/open-apis/im/v1/messages/{message_id}/reply", reply_message)
    app.router.add_patch("/open-apis/im/v1/messages/{message_id}", patch_message)
    app.router.add_get("/open-apis/im/v1/messages/{message_id}", get_message)
