"""Envelopes as Lark pushes them to an app's webhook: a card click and a message mention."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from larksandbox import App


def _header(app: App, event_type: str, create_time: str) -> dict[str, Any]:
    return {
        "event_id": secrets.token_hex(16),
        "token": app.verification_token,
        "create_time": create_time,
        "event_type": event_type,
        "tenant_key": app.tenant_key,
        "app_id": app.app_id,
    }


def card_action(app: App, value: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": "2.0",
        "header": _header(app, "card.action.trigger", str(time.time_ns() // 1000)),  # µs
        "event": {
            "operator": {
                "tenant_key": app.tenant_key,
                "user_id": "alice",
                "open_id": "ou_alice",
                "union_id": "on_alice",
            },
            "token": f"c-{secrets.token_hex(20)}",
            "action": {"value": value, "tag": "button", "name": "approve"},
            "host": "im_message",
            "context": {"open_message_id": "om_card_1", "open_chat_id": "oc_ops"},
        },
    }


def message_event(app: App, text: str) -> dict[str, Any]:
    now_ms = str(time.time_ns() // 1_000_000)
    return {
        "schema": "2.0",
        "header": _header(app, "im.message.receive_v1", now_ms),
        "event": {
            "sender": {
                "sender_id": {"union_id": "on_alice", "user_id": "alice", "open_id": "ou_alice"},
                "sender_type": "user",
                "tenant_key": app.tenant_key,
            },
            "message": {
                "message_id": "om_text_1",
                "root_id": "",
                "parent_id": "",
                "create_time": now_ms,
                "update_time": now_ms,
                "chat_id": "oc_ops",
                "thread_id": "",
                "chat_type": "group",
                "message_type": "text",
                "content": json.dumps({"text": text}, ensure_ascii=False),
                "mentions": [
                    {
                        "key": "@_user_1",
                        "id": {"open_id": app.bot_open_id, "union_id": "", "user_id": ""},
                        "name": app.name,
                        "tenant_key": app.tenant_key,
                    }
                ],
                "user_agent": "Mozilla/5.0 Lark/7.30",
            },
        },
    }
