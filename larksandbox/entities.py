"""The sandbox's entities: apps, users, chats, messages with their revisions, clicks, tokens,
the switchable faults and the card locks, and the id helper.

Plain dataclasses; `SandboxState` (larksandbox/state.py) holds them, enforces Lark's limits on
them and persists them.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

# A JSON 2.0 card being interacted with refuses PATCH (230099, sub-code 11310 "card action is
# lock", docs/lark-reference.md §4.3) from the click until its callback is answered, and, by the
# sandbox's choice (the length is not documented), this long after the answer.
CARD_LOCK_AFTER_ANSWER_MS = 1000


def new_id(prefix: str) -> str:
    """A fresh Lark-style id: the prefix, "_", 24 hex digits."""
    return f"{prefix}_{secrets.token_hex(12)}"


@dataclass
class App:
    app_id: str
    app_secret: str
    tenant_key: str
    encrypt_key: str
    verification_token: str
    name: str = "countersign (sandbox)"
    bot_open_id: str = ""
    # Webhook push targets; empty means the long connection (when a client is connected).
    event_url: str = ""
    card_url: str = ""
    # The web sign-in's allowed redirect_uri values (Lark: Security Settings > Redirect URLs);
    # authorize sends a browser nowhere else.
    redirect_urls: list[str] = field(default_factory=list)
    # The app holds im:message.group_msg ("read all messages in groups it is in"): Lark then
    # delivers every group message to it, not only those that mention the bot.
    group_msg_scope: bool = False

    def __post_init__(self) -> None:
        if not self.bot_open_id:
            self.bot_open_id = f"ou_bot_{self.app_id}"


@dataclass
class User:
    open_id: str
    name: str
    tenant_key: str
    union_id: str = ""
    user_id: str = ""
    locale: str = "en_us"

    def __post_init__(self) -> None:
        self.union_id = self.union_id or self.open_id.replace("ou_", "on_", 1)
        self.user_id = self.user_id or self.open_id.removeprefix("ou_")


@dataclass
class Chat:
    chat_id: str
    name: str
    members: list[str]
    chat_type: Literal["group", "p2p"] = "group"
    # apps (bots) in the chat; the default app is in every default chat
    apps: list[str] = field(default_factory=list)


@dataclass
class Revision:
    at: str
    content: str
    source: Literal["create", "patch", "callback"]
    actor: str


@dataclass
class Message:
    message_id: str
    chat_id: str
    msg_type: str
    content: str
    sender_type: Literal["app", "user"]
    sender_id: str
    created_at: str
    uuid: str = ""
    root_id: str = ""
    parent_id: str = ""
    forwarded_from: str = ""
    mentions_bot: bool = False
    history: list[Revision] = field(default_factory=list)

    def card(self) -> dict[str, Any] | None:
        if self.msg_type != "interactive":
            return None
        loaded: dict[str, Any] = json.loads(self.content)
        return loaded


@dataclass
class Click:
    click_id: str
    message_id: str
    chat_id: str
    operator: str
    value: dict[str, Any]
    event_id: str
    at: str
    status: Literal["answered", "timeout", "error", "undeliverable"]
    toast: dict[str, Any] | None
    card_changed: bool
    latency_ms: float
    client_error: int | None = None
    client_error_msg: str = ""
    name: str = ""  # the component's name (a form's submit button has one)
    form_value: dict[str, str] | None = None  # what a form submit sent


@dataclass
class Token:
    token: str
    app_id: str
    expires_at: datetime


@dataclass
class Faults:
    """Switchable misbehaviour for resilience tests (control API)."""

    fail_next_patches: int = 0
    fail_patch_code: int = 230020
    latency_ms: int = 0
    # the next N message creates (send/reply) succeed but their answer is lost (HTTP 500)
    lose_next_create_answers: int = 0
    app_rate_limit_per_s: int = 0  # 0 = off; else HTTP 429 / 99991400 beyond it
    fail_next_gets: int = 0  # the next N message reads answer HTTP 500 (a transient error)
    # Not faults but Lark rules, switchable here: how long a card stays locked after a callback
    # answer (0: only while the callback is in flight), and whether forwarded copies are
    # clickable as if every card set `config.enable_forward_interaction`.
    card_lock_after_answer_ms: int = CARD_LOCK_AFTER_ANSWER_MS
    forwarded_cards_interactive: bool = False


@dataclass
class CardLock:
    """Why a card refuses patches now: clicks in flight, a recent answer, a hold (control API).

    Times are `time.monotonic()`, not the sandbox clock: tests shift that clock by days."""

    in_flight: int = 0
    answered_at: float | None = None
    held: bool = False
