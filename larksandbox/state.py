"""The sandbox's world: `SandboxState` holds the apps, users, chats, messages, clicks and tokens
(the entities are in larksandbox/entities.py, the web sign-in's grants in
larksandbox/oauth_grants.py) with the bookkeeping Lark's limits need: the clock, tokens, rate
limits, uuid dedupe, card locks, live-update pub/sub, and saving and loading a state file; also
the documented defaults (`default_state`).

The clock is injectable (`clock_offset`) so tests can age a message past 14 days or a token
past its expiry.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import secrets
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from larksandbox.entities import (
    App,
    CardLock,
    Chat,
    Click,
    Faults,
    Message,
    Revision,
    Token,
    User,
    new_id,
)
from larksandbox.oauth_grants import OAuthGrants

TOKEN_TTL_S = 7200
TOKEN_REFRESH_WINDOW_S = 1800  # Lark issues a new token when < 30 min remain
UUID_DEDUPE_S = 3600
PATCH_LIMIT_PER_S = 5
CHAT_SEND_LIMIT_PER_S = 5
CARD_MAX_BYTES = 30 * 1024
TEXT_MAX_BYTES = 150 * 1024
PATCH_MAX_AGE = timedelta(days=14)
# Clicks reach the app only this long after the card was sent: 14 days for JSON 2.0 cards, 30
# for 1.0 cards (docs/lark-reference.md §5).
CLICK_MAX_AGE_V2 = timedelta(days=14)
CLICK_MAX_AGE_V1 = timedelta(days=30)
REFUSALS_KEPT = 50

log = logging.getLogger(__name__)


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
    card_locks: dict[str, CardLock] = field(default_factory=dict)
    # web sign-in: authorization codes, user access and refresh tokens (saved, unlike app tokens)
    oauth: OAuthGrants = field(default_factory=OAuthGrants)
    # refused patches per message, newest last (not persisted): what the bot was told
    patch_refusals: dict[str, deque[dict[str, Any]]] = field(default_factory=dict)
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
        return new_id("om")

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

    def refuse_patch(self, message: Message, code: int, msg: str) -> None:
        refusals = self.patch_refusals.setdefault(message.message_id, deque(maxlen=REFUSALS_KEPT))
        refusals.append({"at": self.now().isoformat(), "code": code, "msg": msg})
        self.publish(
            {
                "type": "patch_refused",
                "chat_id": message.chat_id,
                "message_id": message.message_id,
                "code": code,
            }
        )

    # -- card locks (a card being interacted with) -------------------------------------------

    def interaction_started(self, message_id: str) -> None:
        self.card_locks.setdefault(message_id, CardLock()).in_flight += 1
        self.publish({"type": "card_lock", "message_id": message_id})

    def interaction_ended(self, message_id: str) -> None:
        lock = self.card_locks.setdefault(message_id, CardLock())
        lock.in_flight = max(0, lock.in_flight - 1)
        lock.answered_at = time.monotonic()
        self.publish({"type": "card_lock", "message_id": message_id})

    def hold_card(self, message_id: str, held: bool) -> None:
        self.card_locks.setdefault(message_id, CardLock()).held = held
        self.publish({"type": "card_lock", "message_id": message_id})

    def card_locked(self, message_id: str) -> bool:
        lock = self.card_locks.get(message_id)
        if lock is None:
            return False
        if lock.held or lock.in_flight > 0:
            return True
        window_s = self.faults.card_lock_after_answer_ms / 1000
        return lock.answered_at is not None and time.monotonic() - lock.answered_at < window_s

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
            "oauth": self.oauth.snapshot(),
        }

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.snapshot(), indent=1, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> SandboxState:
        data = _renamed_legacy_app(json.loads(path.read_text(encoding="utf-8")), path)
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
        state.oauth = OAuthGrants.load(data.get("oauth", {}))
        return state


# Lark's app id format: "cli_" and 16 lowercase hex digits (docs/lark-reference.md §1.1).
DEFAULT_APP_ID = "cli_a7c3e9b15d2f4068"
DEFAULT_TENANT = "sandbox-tenant"
# What DEFAULT_APP_ID was before it took Lark's format; state files saved then still load.
LEGACY_DEFAULT_APP_ID = "cli_sandbox"


def _renamed_legacy_app(data: Any, path: Path) -> Any:
    """A state file saved with the old default app id, moved to DEFAULT_APP_ID (same secrets).

    The app id is everywhere the app is: its record, chat memberships, the messages it sent."""
    if not isinstance(data, dict):
        raise ValueError("a sandbox state file holds a JSON object")
    apps = data.get("apps", [])
    ids = {item.get("app_id") for item in apps if isinstance(item, dict)}
    if LEGACY_DEFAULT_APP_ID not in ids:
        return data
    if DEFAULT_APP_ID in ids:
        raise ValueError(
            f"it holds both {LEGACY_DEFAULT_APP_ID} (the old default app id) and "
            f"{DEFAULT_APP_ID}; remove one of them"
        )
    old, new = LEGACY_DEFAULT_APP_ID, DEFAULT_APP_ID
    for item in apps:
        if item.get("app_id") == old:
            item["app_id"] = new
            if item.get("bot_open_id") == f"ou_bot_{old}":
                item["bot_open_id"] = f"ou_bot_{new}"
    for chat in data.get("chats", []):
        chat["apps"] = [new if app_id == old else app_id for app_id in chat.get("apps", [])]
    for message in data.get("messages", []):
        if message.get("sender_type") == "app" and message.get("sender_id") == old:
            message["sender_id"] = new
        for revision in message.get("history", []):
            if revision.get("actor") == old:
                revision["actor"] = new
    log.warning("%s: the app %s is now %s (Lark's app id format)", path, old, new)
    return data


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
        ("ou_carol", "Carol", DEFAULT_TENANT),  # a third operator: N-of-M approval
        ("ou_mallory", "Mallory", DEFAULT_TENANT),
        ("ou_eve", "Eve", "other-tenant"),
    ]:
        state.users[open_id] = User(open_id, name, tenant)
    for chat_id, name, members in [
        ("oc_ops", "Ops", ["ou_alice", "ou_bob", "ou_carol", "ou_mallory"]),
        ("oc_acme", "Acme (counterparty)", ["ou_alice"]),
        ("oc_other", "Other", ["ou_alice", "ou_mallory"]),
    ]:
        state.chats[chat_id] = Chat(chat_id, name, members, apps=[app.app_id])
    return state
