"""A chat's history: `GET /open-apis/im/v1/messages` as Lark serves it (paged, oldest first
unless asked otherwise, only to an app in the chat). countersign reads it to check an audit
export against the chain heads it posted (`countersign audit verify FILE --witness`)."""

from __future__ import annotations

from aiohttp import web

from larksandbox.openapi import LarkError, _authorized_app, _parse, _state, message_json, ok

LIST_PAGE_DEFAULT, LIST_PAGE_MAX = 20, 50


async def list_messages(request: web.Request) -> web.Response:
    """`GET /open-apis/im/v1/messages`: a chat's history, oldest first unless
    `sort_type=ByCreateTimeDesc`, between `start_time` and `end_time` (seconds), a page of
    `page_size` (1..50) at a time; `page_token` continues where the last page ended."""
    app = await _authorized_app(request)
    state = _state(request)
    query = request.query
    if query.get("container_id_type") != "chat":
        raise LarkError(99992402, "field validation failed: container_id_type must be chat")
    chat_id = query.get("container_id", "")
    if chat_id not in state.chats:
        raise LarkError(230001, f"invalid request parameter: chat {chat_id} not found")
    if app.app_id not in state.chats[chat_id].apps:
        raise LarkError(230002, "The bot is not in the chat")
    try:
        size = int(query.get("page_size", LIST_PAGE_DEFAULT))
        start = int(query.get("start_time", 0))
        end = int(query["end_time"]) if "end_time" in query else None
        offset = int(query.get("page_token") or 0)
    except ValueError:
        raise LarkError(99992402, "field validation failed: a number is not a number") from None
    if not 1 <= size <= LIST_PAGE_MAX:
        raise LarkError(99992402, f"field validation failed: page_size must be 1..{LIST_PAGE_MAX}")
    found = [
        m
        for m in state.messages.values()
        if m.chat_id == chat_id
        and _parse(m.created_at) >= start
        and (end is None or _parse(m.created_at) <= end)
    ]
    if query.get("sort_type") == "ByCreateTimeDesc":
        found.reverse()
    page = found[offset : offset + size]
    more = offset + size < len(found)
    return ok(
        {
            "has_more": more,
            "page_token": str(offset + size) if more else "",
            "items": [message_json(state, message) for message in page],
        }
    )


def add_routes(app: web.Application) -> None:
    app.router.add_get("/open-apis/im/v1/messages", list_messages)
