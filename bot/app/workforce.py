"""The background workers of a bot process, wired from the config: the card worker, the
executor/reconciler, expiry, every domain's runner (built by its domain from its settings,
with what each runs beside the executor, e.g. the simulated venue's matching clock) and, on
PostgreSQL, the listener that lets other replicas wake them (`store.backend.due_listener`).

`serve` runs them next to the ingress; `countersign worker` runs them alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import tzinfo
from functools import partial
from typing import Any

from bot.config import Config, zone
from bot.config.policy import policy_digests, second_look_above
from bot.lark.api import LarkApi, retrying
from cards.conclusion import Voice
from kernel.problems import FieldProblem
from kernel.timeutil import Clock
from store import (
    AuditChain,
    DueListener,
    ExecutionLedger,
    Operation,
    Store,
    claim_id,
    is_sqlite,
)
from workers.audit_chain import run_audit_chain
from workers.audit_witness import run_audit_witness
from workers.auto_send import auto_send_rules, run_auto_send
from workers.cards import CardWorker
from workers.crash import crash_point
from workers.deliveries import DeliveryWorker
from workers.domains import DOMAINS
from workers.domains.base import Notice, RunnerContext
from workers.domains.execution import Background, Runner
from workers.executor import ExecutionWorker
from workers.expiry import run_expiry
from workers.reminders import ReminderWorker

log = logging.getLogger("countersign.workers")

SEND_ATTEMPTS = 4


class RetryingLark:
    """Lark sends, replies and patches with tenacity backoff. Retrying never posts twice:
    every send and reply carries its uuid (Lark dedupes), and a patch is idempotent."""

    def __init__(self, api: LarkApi) -> None:
        self.api = api

    async def send_card(self, chat_id: str, card: dict[str, Any], uuid: str) -> str:
        return await retrying(
            lambda: self.api.send_card(chat_id, card, uuid), attempts=SEND_ATTEMPTS
        )

    async def patch_card(self, message_id: str, card: dict[str, Any]) -> None:
        await retrying(lambda: self.api.patch_card(message_id, card), attempts=SEND_ATTEMPTS)

    async def send_text(self, receive_id: str, text: str, uuid: str) -> str:
        return await retrying(
            lambda: self.api.send_text(receive_id, text, uuid), attempts=SEND_ATTEMPTS
        )

    async def reply_text(self, message_id: str, text: str, uuid: str) -> str:
        return await retrying(
            lambda: self.api.reply_text(message_id, text, uuid), attempts=SEND_ATTEMPTS
        )

    async def get_message(self, message_id: str) -> dict[str, Any]:
        # one read per delivery attempt: a failed read is a failed attempt, retried by the
        # delivery worker's own backoff (and visible in its attempts)
        return await self.api.get_message(message_id)


@dataclass
class Workforce:
    cards: CardWorker | None
    executor: ExecutionWorker
    deliveries: DeliveryWorker
    runners: Mapping[str, Runner]  # by kind: those that can run in this process
    # PostgreSQL only: notifications from other replicas wake these workers
    due_listener: DueListener | None = None
    reminders: ReminderWorker | None = None
    # the audit chain head's daily line in the audiences' chats (None: no Lark, or off)
    witness: Background | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    # called after the executor records an outcome (the card and delivery workers' kicks;
    # a worker process adds its report to the parent)
    outcome_hooks: list[Callable[[], None]] = field(default_factory=list)

    def _checked_kinds(self) -> dict[str, Runner]:
        """The runners of kinds admitted against what their runner could ever execute."""
        return {
            kind: runner
            for kind, runner in self.runners.items()
            if kind in DOMAINS and DOMAINS[kind].needs_capabilities
        }

    def capability_readers(self) -> dict[str, Callable[[], Awaitable[object]]]:
        """Per kind, how intake reads what its runner could ever execute."""
        return {kind: runner.capabilities for kind, runner in self._checked_kinds().items()}

    def precheck_readers(
        self,
    ) -> dict[str, Callable[[Mapping[str, Any]], Awaitable[list[FieldProblem]]]]:
        """Per kind, the pre-check a payload would meet if confirmed now (the API's dry run)."""
        return {kind: runner.precheck for kind, runner in self._checked_kinds().items()}

    def kick_cards(self) -> None:
        if self.cards is not None:
            self.cards.kick()

    def wakes(self) -> dict[str, Callable[[], None]]:
        """Each worker's kick by the name wake-ups from outside this process use."""
        return {
            "executor": self.executor.kick,
            "cards": self.kick_cards,
            "deliveries": self.deliveries.kick,
        }

    async def close(self, grace_s: float) -> None:
        if self.tasks:
            _done, late = await asyncio.wait(self.tasks, timeout=grace_s)
            for task in late:  # anything left is recovered on start, as after a crash
                task.cancel()
            for task in late:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await close_runners(self.runners.values())


async def close_runners(runners: Iterable[Runner]) -> None:
    for runner in runners:
        try:
            await runner.close()
        except Exception:  # the others still close; what a runner left is recovered on start
            log.exception("closing the %s runner failed", runner.kind)


async def open_runners(config: Config, context: RunnerContext) -> dict[str, Runner]:
    """Every registered domain's runner for this process, built by the domain from its
    settings (a kind that cannot run here, e.g. without Lark, has none)."""
    runners: dict[str, Runner] = {}
    try:
        for kind, plugin in DOMAINS.items():
            settings = config.settings.domains.for_kind(kind)
            runner = await plugin.open_runner(settings, context)
            if runner is not None:
                runners[kind] = runner
    except BaseException:
        await close_runners(runners.values())
        raise
    return runners


def filing_receipts(config: Config) -> Callable[[Operation], Notice | None]:
    """For the delivery worker: the internal line an operation's filing has due, asked of
    its domain now (None: its kind or its settings name none any more)."""

    def receipt(op: Operation) -> Notice | None:
        plugin = DOMAINS.get(op.kind)
        if plugin is None:
            return None
        payload = plugin.stored(op.envelope.schema_version, op.payload)
        if payload is None:
            return None
        return plugin.filing_receipt(payload, config.settings.domains.for_kind(op.kind))

    return receipt


async def build_workforce(
    config: Config, store: Store, api: LarkApi | None, *, clock: Clock, tz: tzinfo | None = None
) -> Workforce:
    settings = config.settings
    cards_tz = tz or zone(settings.cards.timezone)
    cards = reminders = None
    lark = RetryingLark(api) if api is not None else None
    if lark is not None:
        cards = CardWorker(
            store,
            lark,
            lang=settings.cards.lang,
            tz=cards_tz,
            poll_s=settings.cards.poll_s,
            people=settings.people,
            second_look_above=second_look_above(settings),
        )
        reminders = ReminderWorker(
            store,
            lark,
            lang=settings.cards.lang,
            tz=cards_tz,
            poll_s=settings.cards.poll_s,
            people=settings.people,
            second_look_above=second_look_above(settings),
        )
    ledger = ExecutionLedger(store)
    kick_executor: list[Callable[[], None]] = []  # the executor's, once it is built

    async def wake(operation_ids: Sequence[str]) -> None:
        """Operations that changed outside countersign (a venue's matching): due now."""
        if operation_ids and await ledger.due_now(operation_ids):
            for kick in kick_executor:
                kick()

    context = RunnerContext(
        clock=clock,
        # the secrets `resolve` checked (an agent wallet's key) are the runners' whatever
        # this process's environment holds
        environ={
            **os.environ,
            **{name: secret.get_secret_value() for name, secret in config.domain_secrets.items()},
        },
        decision_of=lambda operation_id: claim_id(store, operation_id),
        on_dispatched=lambda _client_id: crash_point("after_dispatch"),
        wake=wake,
        people=settings.people,
        lark=lark,
        allow_internal_targets=bool(settings.deliveries.allow_internal_targets),
        tick_s=settings.execution.venue_tick_s,
        record_evidence=ledger.record_evidence,
        evidence_of=ledger.evidence,
    )
    runners = await open_runners(config, context)
    execution = settings.execution
    delivery = settings.deliveries
    deliveries = DeliveryWorker(
        store,
        replies=lark,
        secrets=config.callback_secret,
        max_attempts=delivery.max_attempts,
        first_retry_s=delivery.first_retry_s,
        max_backoff_s=delivery.max_backoff_s,
        timeout_s=delivery.timeout_s,
        poll_s=execution.poll_s,
        allow_internal=delivery.allow_internal_targets,
        outside_chats=settings.outside_chats(),
        voice=Voice(settings.cards.lang, cards_tz, settings.people),
        chats=lark,
        filing_receipts=filing_receipts(config),
    )
    outcome_hooks: list[Callable[[], None]] = [deliveries.kick]
    if cards is not None:
        outcome_hooks.append(cards.kick)

    def on_outcome() -> None:
        for hook in outcome_hooks:
            hook()

    executor = ExecutionWorker(
        store,
        runners,
        concurrency=execution.concurrency,
        poll_s=execution.poll_s,
        submit_timeout_s=execution.submit_timeout_s,
        not_found_after_s=execution.not_found_after_s,
        track_max_s=execution.track_max_s,
        max_failed_passes=execution.max_failed_passes,
        on_outcome=on_outcome,
    )
    kick_executor.append(executor.kick)
    force = Workforce(
        cards, executor, deliveries, runners, outcome_hooks=outcome_hooks, reminders=reminders
    )
    chats = settings.witness_chats()
    if lark is not None and settings.audit.witness and chats:
        force.witness = partial(
            run_audit_witness,
            AuditChain(store),
            lark,
            chats,
            at=settings.audit.witness_time,
            tz=cards_tz,
            clock=clock,
            poll_s=settings.audit.poll_s,
        )
    if not is_sqlite(settings.store.url):
        force.due_listener = DueListener(
            settings.store.url, force.wakes(), schema=settings.store.schema_name
        )
    return force


def start_workforce(force: Workforce, config: Config, store: Store, stop: asyncio.Event) -> None:
    settings = config.settings
    if force.due_listener is not None:
        force.tasks.append(asyncio.create_task(force.due_listener.run(stop), name="due-listener"))
    if force.cards is not None:
        force.tasks.append(asyncio.create_task(force.cards.run(stop), name="card-worker"))
    if force.reminders is not None:
        force.tasks.append(asyncio.create_task(force.reminders.run(stop), name="reminders"))

    async def on_expired(_ids: list[str]) -> None:
        force.kick_cards()  # the expired cards are due: patch them now

    force.tasks.append(
        asyncio.create_task(
            run_expiry(store, settings.operations.expiry_sweep_s, stop, on_expired),
            name="expiry",
        )
    )

    def on_auto_sent() -> None:  # claimed by the clock: run them, patch their cards
        force.executor.kick()
        force.kick_cards()

    force.tasks.append(
        asyncio.create_task(
            run_auto_send(
                store,
                # re-checked at each claim, as a click is: the policies and time boxes now
                auto_send_rules(policy_digests(settings), settings.domains.for_kind),
                settings.operations.expiry_sweep_s,
                stop,
                on_auto_sent,
            ),
            name="auto-send",
        )
    )
    force.tasks.append(asyncio.create_task(force.executor.run(stop), name="executor"))
    force.tasks.append(
        asyncio.create_task(run_audit_chain(AuditChain(store), stop), name="audit-chain")
    )
    if force.witness is not None:
        force.tasks.append(asyncio.create_task(running(force.witness, stop), name="audit-witness"))
    force.tasks.append(asyncio.create_task(force.deliveries.run(stop), name="deliveries"))
    for kind, runner in force.runners.items():
        for number, background in enumerate(runner.background()):
            force.tasks.append(
                asyncio.create_task(running(background, stop), name=f"{kind}-{number}")
            )


async def running(background: Background, stop: asyncio.Event) -> None:
    """`background` until `stop` (a task needs a coroutine; a Background is any awaitable)."""
    await background(stop)
