"""The sandbox's world: apps, users, chats, messages (with history), clicks, tokens.

Plain data plus the bookkeeping Lark's limits need. The clock is injectable (`clock_offset`)
so tests can age a message past 14 days or a token past its expiry.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import secrets
from collections import deque
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

TOKEN_TTL_S = 7200
TOKEN_REFRESH_WINDOW_S = 1800  # Lark issues a new token when < 30 min remain
UUID_DEDUPE_S = 3600
PATCH_LIMIT_PER_S = 5
CHAT_SEND_LIMIT_PER_S = 5
CARD_MAX_BYTES = 30 * 1024
TEXT_MAX_BYTES = 150 * 1024
PATCH_MAX_AGE = timedelta(days=14)


def _id(prefix: str) -> str:
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


@dataclass
class SandboxState:
    apps: dict[str, App] = field(default_factory=dict)
    users: dict[str, User] = field(default_factory=dict)
    chats: dict[str, Chat] = field(default_factory=dict)
    messages: dict[str, Message] = field(default_factory=dict)
    clicks: list[Click] = field(default_factory=list)
    clock_offset_s: float = 0.0
    # when set, time stands still here (plus the offset): rate-limit tests need exact seconds
    frozen_at: datetime | None = None
    faults: Faults = field(default_factory=Faults)
    tokens: dict[str, Token] = field(default_factory=dict)
    uuids: dict[tuple[str, str], tuple[str, datetime]] = field(default_factory=dict)
    patch_times: dict[str, deque[float]] = field(default_factory=dict)
    send_times: dict[str, deque[float]] = field(default_factory=dict)
    app_call_times: dict[str, deque[float]] = field(default_factory=dict)
    _listeners: set[asyncio.Queue[dict[str, Any]]] = field(default_factory=set)
    _seq: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    # -- time -------------------------------------------------------------------------------

    def now(self) -> datetime:
        base = self.frozen_at or datetime.now(UTC)
        return base + timedelta(seconds=self.clock_offset_s)

    def now_s(self) -> float:
        return self.now().timestamp()

    # -- lookups ----------------------------------------------------------------------------

    def new_message_id(self) -> str:
        return _id("om")

    def new_event_id(self) -> str:
        return secrets.token_hex(16)

    def app_for_token(self, token: str) -> App | None:
        found = self.tokens.get(token)
        if found is None or found.expires_at <= self.now():
            return None
        return self.apps.get(found.app_id)

    def issue_token(self, app: App) -> Token:
        now = self.now()
        current = [t for t in self.tokens.values() if t.app_id == app.app_id and t.expires_at > now]
        best = max(current, key=lambda t: t.expires_at, default=None)
        if best is not None and (best.expires_at - now).total_seconds() >= TOKEN_REFRESH_WINDOW_S:
            return best
        token = Token(
            f"t-{secrets.token_hex(16)}", app.app_id, now + timedelta(seconds=TOKEN_TTL_S)
        )
        self.tokens[token.token] = token
        return token

    # -- limits -----------------------------------------------------------------------------

    @staticmethod
    def _within(times: deque[float], now: float, per_s: int) -> bool:
        """Record a call at `now` if fewer than `per_s` happened in the last second."""
        while times and now - times[0] >= 1.0:
            times.popleft()
        if len(times) >= per_s:
            return False
        times.append(now)
        return True

    def allow_patch(self, message_id: str) -> bool:
        return self._within(
            self.patch_times.setdefault(message_id, deque()), self.now_s(), PATCH_LIMIT_PER_S
        )

    def allow_send(self, chat_id: str) -> bool:
        return self._within(
            self.send_times.setdefault(chat_id, deque()), self.now_s(), CHAT_SEND_LIMIT_PER_S
        )

    def allow_app_call(self, app_id: str) -> bool:
        limit = self.faults.app_rate_limit_per_s
        if limit <= 0:
            return True
        return self._within(self.app_call_times.setdefault(app_id, deque()), self.now_s(), limit)

    def dedupe(self, app_id: str, uuid: str) -> Message | None:
        if not uuid:
            return None
        hit = self.uuids.get((app_id, uuid))
        if hit is None or (self.now() - hit[1]).total_seconds() >= UUID_DEDUPE_S:
            return None
        return self.messages.get(hit[0])

    # -- changes ----------------------------------------------------------------------------

    def add_message(self, message: Message, actor: str) -> Message:
        message.history.append(Revision(message.created_at, message.content, "create", actor))
        self.messages[message.message_id] = message
        if message.uuid and message.sender_type == "app":
            self.uuids[(message.sender_id, message.uuid)] = (message.message_id, self.now())
        self.publish(
            {"type": "message", "chat_id": message.chat_id, "message_id": message.message_id}
        )
        return message

    def revise(
        self, message: Message, content: str, source: Literal["patch", "callback"], actor: str
    ) -> None:
        message.content = content
        message.history.append(Revision(self.now().isoformat(), content, source, actor))
        self.publish(
            {"type": "message", "chat_id": message.chat_id, "message_id": message.message_id}
        )

    def record_click(self, click: Click) -> None:
        self.clicks.append(click)
        self.publish({"type": "click", "chat_id": click.chat_id, "message_id": click.message_id})

    # -- live updates (SSE) -----------------------------------------------------------------

    def subscribe(self) -> asyncio.Queue[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=1000)
        self._listeners.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        self._listeners.discard(queue)

    def publish(self, event: dict[str, Any]) -> None:
        event = {**event, "seq": next(self._seq)}
        for queue in list(self._listeners):
            if queue.full():  # a stalled browser tab must not grow memory without bound
                self._listeners.discard(queue)
            else:
                queue.put_nowait(event)

    # -- persistence ------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return {
            "apps": [asdict(a) for a in self.apps.values()],
            "users": [asdict(u) for u in self.users.values()],
            "chats": [asdict(c) for c in self.chats.values()],
            "messages": [asdict(m) for m in self.messages.values()],
            "clicks": [asdict(c) for c in self.clicks],
            "clock_offset_s": self.clock_offset_s,
        }

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.snapshot(), indent=1, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> SandboxState:
        data = json.loads(path.read_text(encoding="utf-8"))
        state = cls(clock_offset_s=float(data.get("clock_offset_s", 0.0)))
        for item in data.get("apps", []):
            state.apps[item["app_id"]] = App(**item)
        for item in data.get("users", []):
            state.users[item["open_id"]] = User(**item)
        for item in data.get("chats", []):
            state.chats[item["chat_id"]] = Chat(**item)
        for item in data.get("messages", []):
            history = [Revision(**rev) for rev in item.pop("history", [])]
            state.messages[item["message_id"]] = Message(**item, history=history)
        for item in data.get("clicks", []):
            state.clicks.append(Click(**item))
        return state


DEFAULT_APP_ID = "cli_sandbox"
DEFAULT_TENANT = "sandbox-tenant"


def default_state() -> SandboxState:
    """The documented defaults; secrets are fresh per start unless a state file is loaded."""
    state = SandboxState()
    app = App(
        app_id=DEFAULT_APP_ID,
        app_secret=f"sandbox-secret-{secrets.token_hex(8)}",
        tenant_key=DEFAULT_TENANT,
        encrypt_key=f"sandbox-encrypt-{secrets.token_hex(8)}",
        verification_token=f"sandbox-verify-{secrets.token_hex(8)}",
    )
    state.apps[app.app_id] = app
    for open_id, name, tenant in [
        ("ou_alice", "Alice", DEFAULT_TENANT),
        ("ou_bob", "Bob", DEFAULT_TENANT),
        ("ou_mallory", "Mallory", DEFAULT_TENANT),
        ("ou_eve", "Eve", "other-tenant"),
    ]:
        state.users[open_id] = User(open_id, name, tenant)
    for chat_id, name, members in [
        ("oc_ops", "Ops", ["ou_alice", "ou_bob", "ou_mallory"]),
        ("oc_acme", "Acme (counterparty)", ["ou_alice"]),
        ("oc_other", "Other", ["ou_alice", "ou_mallory"]),
    ]:
        state.chats[chat_id] = Chat(chat_id, name, members, apps=[app.app_id])
    return state
