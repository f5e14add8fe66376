"""Result return worker: each conclusion goes back to its proposer, retried, never re-executed.

A conclusion is a row in the deliveries outbox (`store.deliveries.delivery_ledger`), written with the outcome
that made it due. This worker leases due rows and sends them: a reply in the source
conversation (Lark, `uuid` = the delivery id, so a retried reply never posts twice) or a
signed webhook (the same delivery id on every attempt, for the receiver to dedupe). Failed
attempts back off (tenacity's exponential schedule) up to `max_attempts`, then the delivery
is `failed` until an operator replays it. Nothing here can execute an operation.

Both routes are the proposer's word, so both are checked here, where they are used: a reply
goes out only once Lark confirms the source message is in the chat intake allowed, and a
webhook only to resolved addresses outside (`workers.targets`), pinned for the connection
(`workers.pinned`), without following redirects. A refused route fails for good, nothing sent.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any, Protocol, cast

import aiohttp
from tenacity import RetryCallState
from tenacity.wait import wait_exponential

from cards.conclusion import ENGLISH_UTC, Voice, reply_text, webhook_body
from kernel.canonical import canonical_json
from kernel.logcontext import about
from kernel.timeutil import iso_utc
from store import (
    Channel,
    Delivery,
    DeliveryLedger,
    ExecutionLedger,
    Operation,
    OperationView,
    OutcomeView,
    Store,
    closing_outcome,
    operation_view,
)
from workers.domains.base import Notice
from workers.loop import drain_loop, seconds_until
from workers.pinned import Resolve, pinned_session, system_resolve
from workers.targets import (
    Address,
    BadUrl,
    Network,
    parse_callback_target,
    parse_callback_url,
    refusal,
)
from workers.webhook_signature import signed_headers

log = logging.getLogger("countersign.deliveries")

SecretLookup = Callable[[str, str], str | None]  # (proposer, secret_ref) -> the secret


class ReplyChannel(Protocol):
    """Lark reply and message read. Errors may carry `kind` ("terminal": Lark refused it for
    good) and `code`."""

    async def reply_text(self, message_id: str, text: str, uuid: str) -> str: ...

    async def get_message(self, message_id: str) -> dict[str, Any]: ...


class ChatChannel(Protocol):
    """Lark message create (a new message in a chat), errors as for `ReplyChannel`."""

    async def send_text(self, receive_id: str, text: str, uuid: str) -> str: ...


# the internal line an operation's filing has due (`Domain.filing_receipt`), None: no more
FilingReceipts = Callable[[Operation], Notice | None]


class Permanent(Exception):
    """A route that can never be used: the delivery fails for good, nothing is sent."""


def reply_uuid(delivery_id: str) -> str:
    return f"cs-dl-{delivery_id}"


class DeliveryWorker:
    def __init__(
        self,
        store: Store,
        *,
        replies: ReplyChannel | None,
        secrets: SecretLookup,
        max_attempts: int = 6,
        first_retry_s: float = 1.0,
        max_backoff_s: float = 300.0,
        timeout_s: float = 10.0,
        poll_s: float = 1.0,
        allow_internal: Sequence[Network] = (),
        resolve: Resolve = system_resolve,
        outside_chats: Mapping[str, str] | None = None,
        tls: ssl.SSLContext | None = None,
        voice: Voice = ENGLISH_UTC,
        chats: ChatChannel | None = None,
        filing_receipts: FilingReceipts | None = None,
    ) -> None:
        self.store = store
        self.voice = voice  # the reply's language, time zone and names
        self.ledger = DeliveryLedger(store)
        self.replies = replies
        self.secrets = secrets
        self.max_attempts = max_attempts
        self.backoff = wait_exponential(multiplier=first_retry_s, max=max_backoff_s)
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        # a pass over one delivery is bounded by the request's time limit; the lease outlives
        # it (a reply retried past it is still one message: Lark dedupes its uuid)
        self.lease_s = 2 * timeout_s + 1
        self.poll_s = poll_s
        self.allow_internal = tuple(allow_internal)
        self.resolve = resolve
        # chats outsiders read (chat id -> who, e.g. a message destination): intake refuses
        # them; a route stored before such a chat was configured is refused here too
        self.outside_chats = dict(outside_chats or {})
        self.tls = tls  # None: the system's trust store, certificates checked on the host name
        self.chats = chats
        self.filing_receipts = filing_receipts
        self._kick = asyncio.Event()

    def kick(self) -> None:
        self._kick.set()

    async def run(self, stop: asyncio.Event) -> None:
        await drain_loop(self.drain, self._kick, stop, self.poll_s, log, self._next_due_in)

    async def drain(self) -> int:
        due = await self.ledger.lease_due(lease_s=self.lease_s)
        await asyncio.gather(*(self.deliver(delivery) for delivery in due))
        return len(due)

    async def _next_due_in(self) -> float | None:
        return seconds_until(self.store.clock, await self.ledger.next_due())

    def _retry_in(self, delivery: Delivery) -> float | None:
        attempt = delivery.attempts + 1  # the one that just failed
        if attempt >= self.max_attempts:
            return None
        state = cast(RetryCallState, SimpleNamespace(attempt_number=attempt))
        return float(self.backoff(state))

    async def deliver(self, delivery: Delivery) -> None:
        with about(delivery.operation_id):
            await self._deliver(delivery)

    async def _deliver(self, delivery: Delivery) -> None:
        try:
            op = await self.store.get(delivery.operation_id)
            assert op is not None, delivery.operation_id
            if delivery.channel == Channel.OPS_CHAT:
                await self._filing_receipt(delivery, op)
                return
            outcomes = await ExecutionLedger(self.store).outcomes(op.id)
            view = operation_view(op, outcomes)
            outcome = next(
                (o for o in view.outcomes if o.outcome_digest == delivery.outcome_digest),
                None,
            ) or closing_outcome(op)
            assert outcome is not None and outcome.outcome_digest == delivery.outcome_digest
            if delivery.channel == Channel.WEBHOOK:
                await self._webhook(delivery, op.envelope.source, view, outcome)
            else:
                await self._reply(delivery, op.envelope.source, view, outcome)
        except Permanent as refused:
            log.warning("delivery %s refused: %s", delivery.id, refused)
            await self.ledger.failed(delivery.id, None, str(refused), retry_in_s=None)
        except Exception as error:  # any surprise is a failed attempt, retried like the rest
            log.exception("delivery %s failed unexpectedly", delivery.id)
            await self.ledger.failed(
                delivery.id, None, f"{type(error).__name__}", retry_in_s=self._retry_in(delivery)
            )

    async def _webhook(
        self, delivery: Delivery, source: Any, view: OperationView, outcome: OutcomeView
    ) -> None:
        route = source.callback
        secret = self.secrets(source.proposer, route.secret_ref)
        if secret is None:  # the config lost the secret: retrying cannot help, people can
            await self.ledger.failed(
                delivery.id,
                None,
                f"no callback secret {route.secret_ref!r} for proposer {source.proposer!r}",
                retry_in_s=None,
            )
            return
        try:
            addresses = await self._target(route.url)
        except OSError as error:  # the lookup failed: perhaps DNS is down for a while
            detail = f"resolving the callback host failed: {type(error).__name__}: {error}"
            log.warning("webhook %s: %s", delivery.id, detail)
            await self.ledger.failed(delivery.id, None, detail, retry_in_s=self._retry_in(delivery))
            return
        body = canonical_json(
            webhook_body(delivery.id, view, outcome, iso_utc(self.store.clock()))
        ).encode()
        headers = signed_headers(secret, body, delivery.id, time.time())
        try:
            async with (
                pinned_session(addresses, self.timeout, self.tls) as http,
                http.post(route.url, data=body, headers=headers, allow_redirects=False) as response,
            ):
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as error:
            detail = f"{type(error).__name__}: {str(error)[:200]}"
            # the origin only: receivers often carry a credential in the path or query
            log.warning("webhook %s to %s: %s", delivery.id, _origin(route.url), detail)
            await self.ledger.failed(delivery.id, None, detail, retry_in_s=self._retry_in(delivery))
            return
        if 200 <= status < 300:
            log.info("webhook %s delivered (HTTP %d)", delivery.id, status)
            await self.ledger.delivered(delivery.id, f"HTTP {status}", status)
        else:
            # a 3xx is not followed: the receiver is the URL the proposer named, nothing else
            detail = f"HTTP {status}" + (" (redirects are not followed)" if status < 400 else "")
            log.warning("webhook %s answered %s", delivery.id, detail)
            await self.ledger.failed(
                delivery.id, status, detail, retry_in_s=self._retry_in(delivery)
            )

    async def _target(self, url: str) -> list[Address]:
        """The addresses a webhook may connect to: resolved once, every one of them outside.

        Permanent when the URL or any address is refused; a failed lookup (OSError) is an
        ordinary failed attempt, retried.
        """
        try:
            target = parse_callback_target(url, self.allow_internal)
        except BadUrl as bad:
            raise Permanent(
                f"callback URL refused: {bad.reason} ({bad.fix}); nothing sent"
            ) from None
        if target.address is not None:
            addresses = [target.address]
        else:
            addresses = await self.resolve(target.host, target.port)
            if not addresses:
                raise OSError(f"no address for {target.host}")
        refused = [why for address in addresses if (why := refusal(address, self.allow_internal))]
        if refused:
            raise Permanent(
                f"callback target {target.host} refused: {'; '.join(refused)} (allow a network "
                "with [deliveries] allow_internal_targets only for receivers you trust); "
                "nothing sent"
            )
        return addresses

    async def _reply(
        self, delivery: Delivery, source: Any, view: OperationView, outcome: OutcomeView
    ) -> None:
        if self.replies is None:
            await self.ledger.failed(
                delivery.id, None, "Lark is off: no reply channel", retry_in_s=None
            )
            return
        conversation = source.conversation
        try:
            await self._check_conversation(conversation.chat_id, conversation.message_id)
            message_id = await self.replies.reply_text(
                conversation.message_id,
                reply_text(view, outcome, self.voice),
                reply_uuid(delivery.id),
            )
        except Permanent:
            raise
        except Exception as error:
            await self._failed_send(delivery, error)
            return
        await self.ledger.delivered(delivery.id, message_id)

    async def _failed_send(self, delivery: Delivery, error: Exception) -> None:
        """A Lark send that failed: for good if Lark refused it, else retried."""
        code = getattr(error, "code", None)
        permanent = getattr(error, "kind", None) == "terminal"
        log.warning("%s %s failed: %s", delivery.channel, delivery.id, error)
        await self.ledger.failed(
            delivery.id,
            code if isinstance(code, int) else None,
            str(error)[:300],
            retry_in_s=None if permanent else self._retry_in(delivery),
        )

    async def _filing_receipt(self, delivery: Delivery, op: Operation) -> None:
        """One line in the draft's internal ops chat (`uuid` = the delivery id: a retry
        never posts twice), asked of the domain now: never to any chat but the one its
        destination names as internal (config checks that is no counterparty's chat)."""
        notice = self.filing_receipts(op) if self.filing_receipts is not None else None
        if notice is None:
            raise Permanent("the draft's destination has no ops chat any more; nothing posted")
        if self.chats is None:
            raise Permanent("Lark is off: no chat to post in")
        if notice.chat_id in self.outside_chats:
            raise Permanent(f"{notice.chat_id} is a chat outsiders read; nothing posted")
        try:
            message_id = await self.chats.send_text(
                notice.chat_id, notice.text, reply_uuid(delivery.id)
            )
        except Exception as error:
            await self._failed_send(delivery, error)
            return
        await self.ledger.delivered(delivery.id, message_id)

    async def _check_conversation(self, chat_id: str, message_id: str) -> None:
        """Lark must place the source message in the chat intake allowed: a reply lands in
        the parent's chat, whatever chat the proposal named. Checked before every reply
        attempt (one read); a terminal answer or a mismatch is permanent, anything else a
        failed attempt, retried.
        """
        assert self.replies is not None
        if chat_id in self.outside_chats:
            raise Permanent(
                f"{chat_id} is the chat of {self.outside_chats[chat_id]!r}, read by outsiders: "
                "no result is replied there; nothing posted"
            )
        try:
            message = await self.replies.get_message(message_id)
        except Exception as error:
            if getattr(error, "kind", None) != "terminal":
                raise  # transient: a failed attempt like any other
            raise Permanent(
                f"Lark cannot show source message {message_id} ({getattr(error, 'code', '?')}: "
                "it does not exist or the bot cannot see it); nothing posted"
            ) from None
        # the error never says where the message really is: that is not the proposer's to know
        if message.get("chat_id") != chat_id:
            raise Permanent(f"source message {message_id} is not in chat {chat_id}; nothing posted")
        if message.get("deleted") is True:
            raise Permanent(f"source message {message_id} was deleted; nothing posted")


def _origin(url: str) -> str:
    """scheme://host:port of a callback URL, for logs."""
    try:
        parsed = parse_callback_url(url)
    except BadUrl:
        return "<unparseable url>"
    return f"{parsed.scheme}://{parsed.host}:{parsed.port}"
