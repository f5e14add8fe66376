"""A decision, whatever the entry it came through: the one write, its verdict, the answer
stored with the refusal, and the kicks.

An entry (the Lark card, bot/ingress/decision.py; the web page, bot/api/web_decide.py)
turns what a person did into a `CardClick`, checks its own values (nothing read, nothing
written yet) and hands it here:

1. `enqueue`: ONE group-commit intent (store/claims/click_writes.py) holding the click's inbox entry and,
   when its own values passed, its decision (the claim or the reject), conditional in the
   database on state, digest, expiry and where the click came from; it returns the operation
   as decided. A click already on record (a replay) is decided never again: its first
   delivery answers for it.
2. `verdict`: what that write did. A confirmation counted once before is `already_confirmed`;
   a click the database refused reads its operation, for the entry's checks to name why
   (bot/decide/provenance.py). A claim kicks the executor at once; the counters move.
3. The entry renders its answer from the verdict, then `answered` stores it with, in the same
   write, the refusal (if refused) or the card the answer carried as shown; `kick` makes the
   decision's card due (now, when no answer carried it) and wakes the card worker.

The entry owns its transport: when to answer and how (the card's ack budget and Flight, the
page's redirect), what a replay gets, and in which lane its bookkeeping writes go.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from bot.decide.counters import DecisionCounters
from bot.decide.provenance import (
    VALUE_CHECKS,
    CardClick,
    Context,
    first_refusal,
    stored_click,
    why_refused,
)
from kernel.canonical import canonical_json
from kernel.reasons import Reason
from store import (
    CardLedger,
    Claimed,
    Click,
    ClickWrites,
    Counted,
    Decided,
    Delegation,
    DelegationLedger,
    Entry,
    FirstWrite,
    Inbox,
    Operation,
    PendingClick,
    ShownCard,
    Store,
)
from workers.crash import crash_point

# The inbox kind each entry's clicks are kept under (the web's keyed by the page's form key).
INBOX_KINDS: Mapping[Entry, str] = {Entry.LARK: "callback", Entry.WEB: "web"}


@dataclass(frozen=True)
class DecideSettings:
    """What the checks need of the configuration, whatever the entry."""

    app_id: str  # the Lark app a card click must name ("" for the web: none is sent)
    tenant_keys: frozenset[str]
    # audience name -> its approval policy's digest as configured now (bot/config/policy.py): a
    # card filed under another policy is stale. None: not compared (no config at hand)
    policies: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Verdict:
    """What a first delivery's write did, and why it was refused if it was."""

    click: CardClick
    stored: Click  # as the store keeps it, with its entry
    decided: Claimed | Counted | Decided | None
    refusal: Reason | None
    # the operation as read to name the refusal (None: not read)
    operation: Operation | None = None


class Decider:
    def __init__(
        self,
        store: Store,
        entry: Entry,
        settings: DecideSettings,
        counters: DecisionCounters,
        *,
        on_card_due: Callable[[], None],
        on_claimed: Callable[[], None],
    ) -> None:
        self.store = store
        self.entry = entry
        self.kind = INBOX_KINDS[entry]
        self.settings = settings
        self.counters = counters
        policies = settings.policies
        self.clicks = ClickWrites(
            store, self.kind, canonical_json(dict(policies)) if policies is not None else None
        )
        self.inbox = Inbox(store)
        self.cards = CardLedger(store)
        self.on_card_due = on_card_due
        self.on_claimed = on_claimed  # the executor has work

    def context(self) -> Context:
        settings = self.settings
        return Context(settings.app_id, settings.tenant_keys, self.store.clock(), settings.policies)

    async def delegations_of(self, click: CardClick, op: Operation | None) -> list[Delegation]:
        """The clicker's delegations in the operation's audience, to name a refusal."""
        if op is None:
            return []
        ledger = DelegationLedger(self.store)
        return await ledger.to_person(op.envelope.audience.name, click.operator_open_id)

    def stored(self, click: CardClick) -> Click:
        return stored_click(click, self.entry)

    def value_refusal(self, click: CardClick, ctx: Context) -> Reason | None:
        """What the click says of itself, checked before anything is read or written."""
        return first_refusal(VALUE_CHECKS, click, ctx)

    async def record_refusal(self, click: CardClick, reason: Reason) -> None:
        """A click refused before it had an inbox entry: its refusal is its one write."""
        await self.store.record_refusal(self.stored(click), reason)
        self.counters.refused(self.entry, reason)

    def enqueue(
        self, click: CardClick, payload: dict[str, Any], refusal: Reason | None
    ) -> PendingClick:
        """Queue the one write: the entry, and the decision unless the values refused it."""
        return self.clicks.enqueue(
            click.event_id, payload, self.stored(click) if refusal is None else None
        )

    async def decide(
        self, click: CardClick, payload: dict[str, Any], refusal: Reason | None, ctx: Context
    ) -> Verdict | None:
        """The one write and its verdict, for an entry with nothing to do in between. None:
        a replay, which its first delivery answers for."""
        first = await self.clicks.outcome(self.enqueue(click, payload, refusal))
        if not first.received.first:
            return None
        return await self.verdict(click, first, refusal, ctx)

    async def verdict(
        self, click: CardClick, first: FirstWrite, refusal: Reason | None, ctx: Context
    ) -> Verdict:
        """What the first delivery's write did (refusal: the value checks'). Reads the
        operation only when the database refused it."""
        decided = first.decided
        op: Operation | None = None
        if first.already_confirmed:  # counted once before: the database changed nothing
            op = await self.store.get(click.operation_id)
            theirs = op is None or click.operator_open_id in op.confirmed_by
            refusal = Reason.ALREADY_CONFIRMED if theirs else Reason.RIGHT_USED
        if refusal is None and decided is None:
            # read now: decided or expired since the write is named as such
            op = await self.store.get(click.operation_id)
            delegations = await self.delegations_of(click, op)
            now = self.store.clock()
            ctx = replace(ctx, now=now, delegations=delegations)
            refusal = why_refused(click, op, ctx, self.entry)
        if refusal is not None:
            self.counters.refused(self.entry, refusal)
            return Verdict(click, self.stored(click), None, refusal, op)
        assert decided is not None
        if isinstance(decided, Claimed):
            crash_point("after_claim")
            self.on_claimed()
        self.counters.decided(self.entry, click.action, decided)
        return Verdict(click, self.stored(click), decided, None)

    async def answered(
        self, verdict: Verdict, answer: dict[str, Any], carried: ShownCard | None = None
    ) -> bool:
        """Store the answer (kept for replays) with, in the same write, the refusal or the
        card the answer carried as shown. False: another answer was stored first."""
        refused = (
            self.store.refusal_statements(verdict.stored, verdict.refusal)
            if verdict.refusal is not None
            else ()
        )
        return await self.inbox.answered(
            self.kind, verdict.click.event_id, answer, carried, refused
        )

    async def kick(self, verdict: Verdict, carried: ShownCard | None = None) -> None:
        """A decision's card is due: now when no answer carried it (else the decision made
        it due after a grace, so the card worker does not race the answer)."""
        if verdict.decided is None:
            return
        if carried is None:
            await self.cards.due_now(verdict.decided.operation)
        self.on_card_due()

    async def settle(
        self, verdict: Verdict, answer: dict[str, Any], carried: ShownCard | None = None
    ) -> None:
        """`answered`, then `kick` even if storing the answer failed."""
        try:
            await self.answered(verdict, answer, carried)
        finally:
            await self.kick(verdict, carried)
