"""A click's first write: its inbox entry and its decision, one group-commit intent.

The consumer checks what a click says of itself (nothing read, nothing written yet), then
submits one intent: the inbox entry (once per event id: the unique index decides) and, if
the entry is new, the claim or the reject, conditional in the database on state, digest,
expiry and the click's provenance (its card's message, the audience's chat and operators,
self-approval), returning the operation as decided. So a click is on record and decided in
one commit, answered from what that commit returned, and then its answer (and the card it
carried) is stored in a second write. Only when the database refused does the consumer read
the operation, to name the reason.

Before a batch takes it, the intent can be withdrawn (`GroupWriter.withdraw`): the
consumer does that when it must answer "busy", so a click told to click again has no
effect. Once a batch has it, it commits or fails with the batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ulid import ULID

from kernel.canonical import record_json
from store.authority.records import Operation
from store.authority.store import Store
from store.claims.claim_sql import claim_params
from store.claims.click_sql import ENTRY_INSERT, ENTRY_STORED, bound_time, replayed
from store.claims.decisions import Claimed, Click, Counted, Decided
from store.claims.quorum_sql import Confirmed, ConfirmLayout, confirm_statements
from store.claims.reject_sql import CLOSING_EVENTS, reject_statements
from store.groupcommit import Intent, Lane, Statement
from store.groupcommit.contract import Pending
from store.inbox.inbox import RECEIVED, InboxEntry, Received, stored_key, without_secrets
from store.vocabulary import ClickAction

DECISION_AT = 2  # the entry's two statements come first


@dataclass(frozen=True)
class FirstWrite:
    received: Received  # the entry: new, or the one a first delivery of this click left
    # None: not decided here (refused, lost a race, replay); Counted: one more confirmation
    decided: Claimed | Counted | Decided | None
    # the operator had already confirmed this operation (nothing changed)
    already_confirmed: bool = False


@dataclass(frozen=True)
class PendingClick:
    """A click's first write, queued: await `ClickWrites.outcome`, or withdraw `pending`."""

    pending: Pending
    entry: InboxEntry
    click: Click | None
    claim_id: str
    layout: ConfirmLayout | None = None  # where a confirmation's branches are


class ClickWrites:
    def __init__(self, store: Store, kind: str, policies: str | None = None) -> None:
        self.store = store
        self.kind = kind
        # JSON {audience: policy digest} as configured now (None: a caller without config)
        self.policies = policies

    def enqueue(self, key: str, envelope: dict[str, Any], click: Click | None) -> PendingClick:
        """Queue the entry and, with `click` (one whose own values the checks let through),
        its decision. Returns at once."""
        if self.store.writer is None:
            raise RuntimeError("this store was opened without its writer; use open_store()")
        now = self.store.clock()
        key = stored_key(key)
        cleaned = without_secrets(envelope)
        sqlite = self.store.sqlite
        entry_params = {"kind": self.kind, "key": key}
        statements: list[Statement] = [
            Statement(
                ENTRY_INSERT,
                {
                    **entry_params,
                    "at": bound_time(now, sqlite),
                    "payload": record_json(cleaned),
                    "status": RECEIVED,
                },
            ),
            Statement(ENTRY_STORED, entry_params, only_if=(0, False)),
        ]
        claim_id = str(ULID.from_datetime(now))
        layout = None
        if click is not None:
            decision, layout = self._decision(click, now, claim_id)
            statements.extend(decision)
        entry = InboxEntry(self.kind, key, now, cleaned, RECEIVED, 0, None)
        pending = self.store.writer.enqueue(Intent(tuple(statements), Lane.PEOPLE))
        return PendingClick(pending, entry, click, claim_id, layout)

    def _decision(
        self, click: Click, now: datetime, claim_id: str
    ) -> tuple[tuple[Statement, ...], ConfirmLayout | None]:
        sqlite = self.store.sqlite
        common = {
            "chat_id": click.chat_id,
            "message_id": click.message_id,
            "event_id": click.event_id,
            "evidence": click.evidence,
        }
        if click.action == ClickAction.CONFIRM:
            params = claim_params(
                operation_id=click.operation_id,
                digest=click.digest,
                operator=click.operator_open_id,
                claim_id=claim_id,
                now=now,
                sqlite=sqlite,
                policies=self.policies,
                entry=click.entry,
                **common,
            )
            return confirm_statements(
                params, sqlite=sqlite, at=DECISION_AT, after=0, card_click=True
            )
        if click.action in CLOSING_EVENTS:
            rejected = reject_statements(
                click.operation_id,
                digest=click.digest,
                operator=click.operator_open_id,
                now=now,
                sqlite=sqlite,
                at=DECISION_AT,
                after=0,
                card_click=True,
                reason=click.reason,
                entry=click.entry,
                action=ClickAction(click.action),
                **common,
            )
            return rejected, None
        return (), None  # an action the checks refuse: nothing to decide

    def withdraw(self, pending: Pending) -> bool:
        """Take a click's first write back if no batch has it yet (see GroupWriter.withdraw)."""
        return self.store.writer is not None and self.store.writer.withdraw(pending)

    async def outcome(self, queued: PendingClick) -> FirstWrite:
        """What the committed write did (raises `Withdrawn` if it was taken back)."""
        results = await queued.pending.future
        inserted, stored = results[0], results[1]
        if not inserted:
            entry = InboxEntry.from_stored(self.kind, queued.entry.key, replayed(stored))
            return FirstWrite(Received(entry, first=False), None)
        received = Received(queued.entry, first=True)
        click = queued.click
        if click is None or len(results) <= DECISION_AT:
            return FirstWrite(received, None)
        if queued.layout is not None:  # a confirmation
            confirmed, row = queued.layout.read(results)
            if confirmed is Confirmed.CLAIMED:
                assert row is not None
                return FirstWrite(received, Claimed(Operation.from_stored(row), queued.claim_id))
            if confirmed is Confirmed.COUNTED:
                assert row is not None
                return FirstWrite(received, Counted(Operation.from_stored(row)))
            # refused (the consumer reads why) or already confirmed (it says so)
            return FirstWrite(received, None, already_confirmed=confirmed is Confirmed.ALREADY)
        decided_rows = results[DECISION_AT]
        if not decided_rows:  # the database refused it: the consumer reads why
            return FirstWrite(received, None)
        return FirstWrite(received, Decided(Operation.from_stored(decided_rows[0])))
