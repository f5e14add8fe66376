"""Schema 2.0 envelopes as Lark pushes them (im.message.receive_v1, card.action.trigger)."""

from __future__ import annotations

import json
import re
from typing import Any

from larksandbox.entities import App, Chat, Message, User
from larksandbox.state import SandboxState
from larksandbox.textmarkup import ALL, AT


def _header(state: SandboxState, app: App, event_type: str, *, micros: bool) -> dict[str, Any]:
    now = state.now().timestamp()
    return {
        "event_id": state.new_event_id(),
        "token": app.verification_token,
        # card callbacks carry microseconds, events milliseconds (docs/lark-reference.md §1.1, §5)
        "create_time": str(int(now * 1_000_000)) if micros else str(int(now * 1000)),
        "event_type": event_type,
        "tenant_key": app.tenant_key,
        "app_id": app.app_id,
    }


def message_received(
    state: SandboxState, app: App, chat: Chat, sender: User, message: Message, text: str
) -> dict[str, Any]:
    mentions = []
    if message.mentions_bot:
        mentions.append(
            {
                "key": "@_user_1",
                "id": {"open_id": app.bot_open_id, "union_id": "", "user_id": ""},
                "name": app.name,
                "tenant_key": app.tenant_key,
            }
        )

    def placeholder(found: re.Match[str]) -> str:
        """A user's <at> markup as Lark delivers it: a `@_user_N` key, listed in mentions."""
        who = found.group(1)
        if who.lower() == ALL:
            return "@_all"
        user = state.users.get(who)
        key = f"@_user_{len(mentions) + 1}"
        mentions.append(
            {
                "key": key,
                "id": {
                    "open_id": who,
                    "union_id": user.union_id if user else "",
                    "user_id": user.user_id if user else "",
                },
                "name": user.name if user else who,
                "tenant_key": user.tenant_key if user else "",
            }
        )
        return key

    text = AT.sub(placeholder, text)
    return {
        "schema": "2.0",
        "header": _header(state, app, "im.message.receive_v1", micros=False),
        "event": {
            "sender": {
                "sender_id": {
                    "open_id": sender.open_id,
                    "union_id": sender.union_id,
                    "user_id": sender.user_id,
                },
                "sender_type": "user",
                "tenant_key": sender.tenant_key,
            },
            "message": {
                "message_id": message.message_id,
                "root_id": message.root_id,
                "parent_id": message.parent_id,
                "create_time": str(int(state.now().timestamp() * 1000)),
                "update_time": str(int(state.now().timestamp() * 1000)),
                "chat_id": chat.chat_id,
                "thread_id": "",
                "chat_type": chat.chat_type,
                "message_type": "text",
                "content": json.dumps({"text": text}, ensure_ascii=False),
                "mentions": mentions,
                "user_agent": "countersign-sandbox",
            },
        },
    }


def card_action(
    state: SandboxState,
    app: App,
    operator: User,
    message: Message,
    value: dict[str, Any] | None,
    *,
    tag: str = "button",
    name: str = "",
    form_value: dict[str, str] | None = None,
) -> dict[str, Any]:
    """`value` is the component's callback value (a form's submit button may have none: the
    key is left out); `form_value` is what a form submit sends, input name -> text."""
    action: dict[str, Any] = {} if value is None else {"value": value}
    action.update(tag=tag, name=name)
    if form_value is not None:
        action["form_value"] = form_value
    return {
        "schema": "2.0",
        "header": _header(state, app, "card.action.trigger", micros=True),
        "event": {
            "operator": {
                "tenant_key": operator.tenant_key,
                "user_id": operator.user_id,
                "open_id": operator.open_id,
                "union_id": operator.union_id,
            },
            "token": f"c-{state.new_event_id()}",
            "action": action,
            "host": "im_message",
            "context": {
                "open_message_id": message.message_id,
                "open_chat_id": message.chat_id,
            },
        },
    }


def text_with_mention(text: str, mention_bot: bool) -> str:
    """What Lark puts in content.text: the @mention becomes a `@_user_N` placeholder."""
    return f"@_user_1 {text}" if mention_bot else text
