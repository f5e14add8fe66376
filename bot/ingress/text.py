"""The text listener: im.message.receive_v1 commands, separate from the callback consumer.

Each message is stored (by message_id) before it is processed; a restarted bot answers
what it had received but not answered, at most `max_tries` times. Replies carry a uuid
derived from the message id, so an answer sent just before a crash is not sent twice.
Text never confirms anything. Who may ask what, where, is `text_scope`'s to say.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Set
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any, Protocol

from bot.config.settings import Settings
from bot.decide.provenance import OPERATION_ID
from bot.ingress.stats import ConsumerStats
from bot.ingress.text_delegation import VERBS as DELEGATION_VERBS
from bot.ingress.text_delegation import delegation_reply
from bot.ingress.text_retries import TextRetries
from bot.ingress.text_scope import Answer, Asker, Scope, scope_of
from cards.plain_text import NAME_MAX_CHARS, TITLE_MAX_CHARS, people_text
from cards.strings import TEXT, Lang, decision_key, text
from cards.vocabulary import OPEN_STATES, headline, person, title_of, when
from cards.world import world_mark
from kernel.timeutil import utc_now
from store import (
    Inbox,
    OperationView,
    Signal,
    State,
    Store,
    answering_a_person,
    operation_view,
    record_signal,
)
from store import view as full_view

log = logging.getLogger("countersign.text")

INBOX_KIND = "text"
EVENT_TYPE = "im.message.receive_v1"
QUEUE_SIZE = 10_000
PENDING_SHOWN = 10
MENTION = re.compile(r"@_user_\d+")
# what `status` may echo back: id-shaped, so it can carry no markup, bidi or length
ID_SHAPED = re.compile(r"[0-9A-Za-z_-]{1,64}")


class Replier(Protocol):
    async def reply_text(self, message_id: str, text: str, uuid: str) -> str: ...


@dataclass(frozen=True)
class TextSettings:
    bot_open_id: str = ""  # when set, group messages must mention exactly this bot
    scope: Scope = field(default_factory=Scope)  # nothing configured: nothing is shown
    lang: Lang = "en"
    tz: tzinfo = UTC  # the cards' time zone: replies give times as the card does
    people: Mapping[str, str] = field(default_factory=dict)  # open id -> display name
    # message destinations' chats (chat id -> destination): what is written there is kept
    # as an inbound signal, and never answered
    signal_chats: Mapping[str, str] = field(default_factory=dict)
    max_tries: int = 3
    workers: int = 2
    # the whole config, for delegation commands (None: they are not offered)
    config: Settings | None = None


def reply_uuid(message_id: str) -> str:
    return f"cs-t-{message_id}"[:50]


def command_text(envelope: dict[str, Any]) -> str:
    content = envelope.get("event", {}).get("message", {}).get("content", "")
    try:
        raw = json.loads(content).get("text", "")
    except (ValueError, AttributeError):
        raw = ""
    return MENTION.sub("", raw if isinstance(raw, str) else "").strip()


class TextListener:
    def __init__(
        self,
        store: Store,
        replier: Replier,
        settings: TextSettings,
        health: Callable[[], Awaitable[dict[str, Any]]],
    ) -> None:
        self.store = store
        self.inbox = Inbox(store)
        self.replier = replier
        self.settings = settings
        self.health = health
        self.stats = ConsumerStats()
        self.retries = TextRetries(store, self.stats, settings.max_tries, INBOX_KIND)
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=QUEUE_SIZE)
        self._tasks: list[asyncio.Task[None]] = []
        self._recovery: asyncio.Task[None] | None = None
        self._running = False
        self._in_hand: set[str] = set()  # message ids being answered by this process

    def on_event(self, envelope: dict[str, Any], transport: str) -> None:
        """From a transport, on the main loop: enqueue and return at once."""
        if envelope.get("header", {}).get("event_type") != EVENT_TYPE:
            return  # acked by the transport; nothing else is subscribed
        self.stats.received()
        self.stats.verified()
        try:
            self.queue.put_nowait(envelope)
        except asyncio.QueueFull:
            # Dropped before it was stored: Lark's at-least-once delivery is our retry.
            self.stats.outcomes["dropped_full"] += 1

    @property
    def healthy(self) -> bool:
        return self._running and all(not task.done() for task in self._tasks)

    def start(self) -> None:
        self._running = True
        self._tasks = [
            asyncio.create_task(self._supervised(), name=f"text-worker-{i}")
            for i in range(self.settings.workers)
        ]
        # recovery runs once and ends; it is not part of `healthy`
        self._recovery = asyncio.create_task(
            self._recover(self.store.clock()), name="text-recovery"
        )

    async def stop(self) -> None:
        self._running = False
        tasks = [*self._tasks, *([self._recovery] if self._recovery else [])]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _supervised(self) -> None:
        while self._running:
            envelope = await self.queue.get()
            if await self.retries.refused(envelope):  # malformed: no try could answer it
                continue
            try:
                await self.handle(envelope)
            except asyncio.CancelledError:
                raise
            except Exception as error:
                # a terminal error is recorded failed at once; any other is tried again with
                # backoff, max_tries times in all (bot/ingress/text_retries.py)
                await self.retries.failed(envelope, error, self._requeue)
            else:
                self.retries.succeeded(envelope)

    def _requeue(self, envelope: dict[str, Any]) -> None:
        if self._running:
            with contextlib.suppress(asyncio.QueueFull):
                self.queue.put_nowait(envelope)

    async def _recover(self, started_at: datetime) -> None:
        """Answer what a previous run stored but did not answer. Only entries received before
        this run started: a live message stored meanwhile is the live path's to answer."""
        for entry in await self.inbox.unanswered(INBOX_KIND, received_before=started_at):
            if await self.retries.refused(entry.payload):
                continue
            try:
                await self.handle(entry.payload)
            except Exception as error:
                await self.retries.failed(entry.payload, error, None)

    async def handle(self, envelope: dict[str, Any]) -> None:
        message_id = envelope.get("event", {}).get("message", {}).get("message_id")
        message_id = message_id if isinstance(message_id, str) else ""
        if message_id and message_id in self._in_hand:
            # A re-push (or recovery) of a message this process is answering right now.
            self.stats.outcomes["duplicate"] += 1
            return
        self._in_hand.add(message_id)
        try:
            with answering_a_person():  # its writes go ahead of background work, as a click's
                await self._handle(envelope)
        finally:
            self._in_hand.discard(message_id)

    async def _handle(self, envelope: dict[str, Any]) -> None:
        message = envelope.get("event", {}).get("message", {})
        message_id = message.get("message_id")
        if not isinstance(message_id, str) or not message_id:
            return
        received = await self.inbox.receive(INBOX_KIND, message_id, envelope)
        if received.entry.status != "received":
            self.stats.outcomes["duplicate"] += 1
            return
        destination = self.settings.signal_chats.get(str(message.get("chat_id")))
        if destination is not None:
            await self._signal(envelope, destination)
            return
        if not self._addressed(envelope):
            await self.inbox.answered(
                INBOX_KIND, message_id, {"ignored": "not addressed to the bot"}
            )
            self.stats.outcomes["ignored"] += 1
            return
        verdict = scope_of(Asker.from_envelope(envelope), self.settings.scope)
        if verdict.answer is Answer.SILENT:
            # Stored as handled so that neither a re-push nor a restart answers it later.
            await self.inbox.answered(INBOX_KIND, message_id, {"ignored": verdict.why})
            self.stats.outcomes["silenced"] += 1
            return
        if not await self.inbox.attempt(INBOX_KIND, message_id, self.settings.max_tries):
            self.stats.outcomes["gave_up"] += 1
            return
        started = utc_now()
        shows_data = verdict.answer is Answer.DATA
        command = command_text(envelope)
        words = command.split()
        config = self.settings.config
        if shows_data and config is not None and words and words[0].lower() in DELEGATION_VERBS:
            reply = await delegation_reply(
                self.store,
                config,
                envelope,
                words,
                bot_open_id=self.settings.bot_open_id,
                tz=self.settings.tz,
                lang=self.settings.lang,
            )
        elif shows_data:
            reply = await self.answer(command, verdict.audiences)
        else:
            reply = text("text.not_set_up", self.settings.lang)  # not even help: no data at all
        await self.replier.reply_text(message_id, reply, reply_uuid(message_id))
        await self.inbox.answered(INBOX_KIND, message_id, {"reply": reply, "scope": verdict.why})
        outcome = "answered" if shows_data else "neutral"
        self.stats.observe_ack((utc_now() - started).total_seconds() * 1000, outcome)

    async def _signal(self, envelope: dict[str, Any], destination: str) -> None:
        """A text in a destination's chat: kept as an inbound signal, answered by silence."""
        event = envelope.get("event", {})
        message = event.get("message", {})
        sender = event.get("sender", {})
        if sender.get("sender_type") == "user":  # not the bot's own messages
            await record_signal(
                self.store,
                Signal(
                    message_id=str(message["message_id"]),
                    destination=destination,
                    chat_id=str(message.get("chat_id")),
                    sender_open_id=str(sender.get("sender_id", {}).get("open_id", "")),
                    text=command_text(envelope),
                    received_at=self._sent_at(message),
                ),
            )
        ignored = {"ignored": "a message destination's chat", "signal": destination}
        await self.inbox.answered(INBOX_KIND, message["message_id"], ignored)
        self.stats.outcomes["signal"] += 1

    def _sent_at(self, message: dict[str, Any]) -> datetime:
        """When Lark says the message was sent (`create_time`, ms), so a text recovered after
        a restart keeps its time; now if Lark gave none that reads."""
        try:
            millis = int(message.get("create_time") or "")
        except ValueError:
            return self.store.clock()
        return datetime.fromtimestamp(millis / 1000, UTC)

    def _addressed(self, envelope: dict[str, Any]) -> bool:
        message = envelope.get("event", {}).get("message", {})
        if message.get("chat_type") == "p2p":
            return True
        mentions = message.get("mentions") or []
        if not self.settings.bot_open_id:
            return bool(mentions)
        return any(m.get("id", {}).get("open_id") == self.settings.bot_open_id for m in mentions)

    async def answer(self, command: str, audiences: Set[str]) -> str:
        """The answer to a command, showing only these audiences' operations."""
        words = command.split()
        verb = words[0].lower() if words else "help"
        if verb == "pending":
            return await self._pending(audiences)
        if verb == "status" and len(words) == 2:
            return await self._status(words[1], audiences)
        if verb == "health":
            return self._health_text(await self.health())
        return text("text.help", self.settings.lang)

    async def _pending(self, audiences: Set[str]) -> str:
        lang = self.settings.lang
        page = await self.store.list_operations(
            state=State.AWAITING_CONFIRMATION, limit=PENDING_SHOWN, audiences=audiences
        )
        if not page.items:
            return text("text.pending.none", lang)
        count = f"{len(page.items)}{'+' if page.has_more else ''}"
        lines = [text("text.pending.head", lang, count=count)]
        for op in page.items:
            view = operation_view(op)  # titles and expiry only: no outcomes needed
            # absolute: a chat reply stays as it was sent, "in 4 min" would go stale on it
            expires = text("card.expires", lang, at=when(view.expires_at, self.settings.tz))
            lines.append(f"- {op.id} {self._title(view)} · {expires}")
        return "\n".join(lines)

    def _title(self, view: OperationView) -> str:
        lang = self.settings.lang
        title = people_text(title_of(view, lang), TITLE_MAX_CHARS, lang)
        mark = world_mark(view, lang)  # which world it acts in, as the card's tag says
        return f"{title} [{mark}]" if mark else title

    async def _status(self, argument: str, audiences: Set[str]) -> str:
        lang, tz, people = self.settings.lang, self.settings.tz, self.settings.people
        if ID_SHAPED.fullmatch(argument) is None:
            # Not echoed: what someone typed could be markup Lark renders in the reply (a
            # mention of everyone, a link), bidi controls or 5,000 characters.
            return text("text.not_an_id", lang)
        # a ULID reads the same in either case
        upper = argument.upper()
        operation_id = upper if OPERATION_ID.fullmatch(upper) else argument
        op = await self.store.get(operation_id)
        if op is None or op.envelope.audience.name not in audiences:  # the same words: no oracle
            return text("text.unknown", lang, id=operation_id)
        view = await full_view(self.store, op)
        # the words the card's header and the dashboard show for this state
        lines = [f"{op.id}: {self._title(view)}", headline(view, people).words(lang)]
        if view.state in OPEN_STATES:
            lines.append(text("card.expires", lang, at=when(view.expires_at, tz)))
        decision = view.decision
        if decision is not None and decision.at:
            key = decision_key(decision.action)
            who = people_text(person(decision.by, people), NAME_MAX_CHARS, lang)
            lines.append(text(key, lang, who=who, at=when(decision.at, tz)))
        return "\n".join(lines)

    def _health_text(self, health: dict[str, Any]) -> str:
        lang = self.settings.lang
        status = str(health.get("status"))
        parts = [text("text.health.overall", lang, status=_health_word(status, lang))]
        for name, component in health.get("components", {}).items():
            state = _health_word(str(component.get("state")), lang)
            component_words = text(f"health.component.{name}", lang)
            parts.append(text("text.health.line", lang, component=component_words, state=state))
        return "\n".join(parts)


def _health_word(state: str, lang: Lang) -> str:
    """A readiness state in words; one this catalogue does not know, as reported."""
    key = f"health.state.{state}"
    return text(key, lang) if key in TEXT else state
