"""Result return worker: each conclusion goes back to its proposer, retried, never re-executed.

A conclusion is a row in the deliveries outbox (`store.deliveries`), written with the outcome
that made it due. This worker leases due rows and sends them: a reply in the source
conversation (Lark, `uuid` = the delivery id, so a retried reply never posts twice) or a
signed webhook (the same delivery id on every attempt, for the receiver to dedupe). Failed
attempts back off (tenacity's exponential schedule) up to `max_attempts`, then the delivery
is `failed` until an operator replays it. Nothing here can execute an operation.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, Protocol, cast

import aiohttp
from tenacity import RetryCallState
from tenacity.wait import wait_exponential

from cards.conclusion import reply_text, webhook_body
from store.authority import Store
from store.canonical import canonical_json
from store.conclusions import closing_outcome
from store.deliveries import Delivery, DeliveryLedger
from store.execution import ExecutionLedger
from store.logcontext import about
from store.projection import operation_view
from store.timeutil import iso_utc
from workers.loop import drain_loop
from workers.webhook_signature import signed_headers

log = logging.getLogger("countersign.deliveries")

SecretLookup = Callable[[str, str], str | None]  # (proposer, secret_ref) -> the secret


class ReplyChannel(Protocol):
    """Lark reply. Errors may carry `kind` ("terminal": Lark refused it for good) and `code`."""

    async def reply_text(self, message_id: str, text: str, uuid: str) -> str: ...


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
    ) -> None:
        self.store = store
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
        self._kick = asyncio.Event()
        self._http: aiohttp.ClientSession | None = None

    def kick(self) -> None:
        self._kick.set()

    async def run(self, stop: asyncio.Event) -> None:
        self._http = aiohttp.ClientSession(timeout=self.timeout)
        try:
            await drain_loop(self.drain, self._kick, stop, self.poll_s, log)
        finally:
            await self._http.close()

    async def drain(self) -> int:
        due = await self.ledger.lease_due(lease_s=self.lease_s)
        await asyncio.gather(*(self.deliver(delivery) for delivery in due))
        return len(due)

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
            outcomes = await ExecutionLedger(self.store).outcomes(op.id)
            view = operation_view(op, outcomes)
            outcome = next(
                (o for o in view["outcomes"] if o["outcome_digest"] == delivery.outcome_digest),
                None,
            ) or closing_outcome(op)
            assert outcome is not None and outcome["outcome_digest"] == delivery.outcome_digest
            if delivery.channel == "webhook":
                await self._webhook(delivery, op.envelope.source, view, outcome)
            else:
                await self._reply(delivery, op.envelope.source, view, outcome)
        except Exception as error:  # any surprise is a failed attempt, retried like the rest
            log.exception("delivery %s failed unexpectedly", delivery.id)
            await self.ledger.failed(
                delivery.id, None, f"{type(error).__name__}", retry_in_s=self._retry_in(delivery)
            )

    async def _webhook(
        self, delivery: Delivery, source: Any, view: dict[str, Any], outcome: dict[str, Any]
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
        body = canonical_json(
            webhook_body(delivery.id, view, outcome, iso_utc(self.store.clock()))
        ).encode()
        headers = signed_headers(secret, body, delivery.id, time.time())
        assert self._http is not None
        try:
            async with self._http.post(route.url, data=body, headers=headers) as response:
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as error:
            detail = f"{type(error).__name__}: {str(error)[:200]}"
            log.warning("webhook %s to %s: %s", delivery.id, route.url, detail)
            await self.ledger.failed(delivery.id, None, detail, retry_in_s=self._retry_in(delivery))
            return
        if 200 <= status < 300:
            log.info("webhook %s delivered (HTTP %d)", delivery.id, status)
            await self.ledger.delivered(delivery.id, f"HTTP {status}", status)
        else:
            log.warning("webhook %s answered HTTP %d", delivery.id, status)
            await self.ledger.failed(
                delivery.id, status, f"HTTP {status}", retry_in_s=self._retry_in(delivery)
            )

    async def _reply(
        self, delivery: Delivery, source: Any, view: dict[str, Any], outcome: dict[str, Any]
    ) -> None:
        if self.replies is None:
            await self.ledger.failed(
                delivery.id, None, "Lark is off: no reply channel", retry_in_s=None
            )
            return
        conversation = source.conversation
        try:
            message_id = await self.replies.reply_text(
                conversation.message_id, reply_text(view, outcome), reply_uuid(delivery.id)
            )
        except Exception as error:
            code = getattr(error, "code", None)
            permanent = getattr(error, "kind", None) == "terminal"
            log.warning("reply %s failed: %s", delivery.id, error)
            await self.ledger.failed(
                delivery.id,
                code if isinstance(code, int) else None,
                str(error)[:300],
                retry_in_s=None if permanent else self._retry_in(delivery),
            )
            return
        await self.ledger.delivered(delivery.id, message_id)
