"""The store's front door: every name the rest of countersign uses from the store.

The store is the operation authority: schema, migrations, vocabulary (enums -> CHECK
constraints), lifecycle, digests, claims, group commit, projection and the outbox. Outside
`store/`, code imports only from here (`from store import Store, State`), never a module
inside it (tests/test_layout.py holds that), so the modules behind the door can move.

Importing `store` is cheap (the CLI starts fast, issue 34): a name's module is loaded on the
name's first use (PEP 562, from the `_OWNER` table), so `import store` alone loads no
SQLAlchemy. mypy reads the same names from the imports under TYPE_CHECKING;
tests/store/test_front_door.py holds the two lists equal.

`store` imports nothing from `bot`, `cards`, `workers` (only `kernel`); payloads are opaque
canonical JSON here.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from store.attention import AWAITING as AWAITING
    from store.attention import SEARCH_MAX_CHARS as SEARCH_MAX_CHARS
    from store.attention import UNKNOWN as UNKNOWN
    from store.attention import UNRESOLVED as UNRESOLVED
    from store.attention import attention as _attention
    from store.attention import counts as _counts
    from store.attention import recent as recent
    from store.attention import search as search
    from store.authority import Store as Store
    from store.auto_send import AUTO_OPERATOR as AUTO_OPERATOR
    from store.auto_send import auto_send_due as auto_send_due
    from store.auto_send import claim_by_clock as claim_by_clock
    from store.auto_send import disarm_disallowed as disarm_disallowed
    from store.canonical import MAX_ENVELOPE_DEPTH as MAX_ENVELOPE_DEPTH
    from store.canonical import MAX_JSON_DEPTH as MAX_JSON_DEPTH
    from store.canonical import EncodedObject as EncodedObject
    from store.canonical import canonical_json as canonical_json
    from store.canonical import float_paths as float_paths
    from store.canonical import loads_strict as loads_strict
    from store.canonical import record_json as record_json
    from store.canonical import sha256_hex as sha256_hex
    from store.canonical import too_deep as too_deep
    from store.cards import CardLedger as CardLedger

    # what the entries and workers use of the write path: a click's card as shown, a
    # time-boxed auto-send's rules, the writer's lanes and promises, a PostgreSQL URL's DSN
    from store.claim_sql import AutoRules as AutoRules
    from store.click_sql import ShownCard as ShownCard
    from store.clicks import ClickWrites as ClickWrites
    from store.clicks import FirstWrite as FirstWrite
    from store.clicks import PendingClick as PendingClick
    from store.conclusions import CHANGES_REQUESTED as CHANGES_REQUESTED
    from store.conclusions import DECLINED as DECLINED
    from store.conclusions import EXPIRED as EXPIRED
    from store.conclusions import closing_outcome as closing_outcome
    from store.decisions import CLOSED_STATE_REASONS as CLOSED_STATE_REASONS
    from store.decisions import Claimed as Claimed
    from store.decisions import Click as Click
    from store.decisions import Counted as Counted
    from store.decisions import Decided as Decided
    from store.decisions import Refused as Refused
    from store.decisions import refusal_reason as refusal_reason
    from store.deliveries import Delivery as Delivery
    from store.deliveries import DeliveryLedger as DeliveryLedger
    from store.engine import create_engine as create_engine
    from store.engine import is_sqlite as is_sqlite
    from store.envelope import Approval as Approval
    from store.envelope import Audience as Audience
    from store.envelope import CallbackRoute as CallbackRoute
    from store.envelope import Conversation as Conversation
    from store.envelope import Source as Source
    from store.events import DueListener as DueListener
    from store.execution import ExecutionLedger as ExecutionLedger
    from store.execution_reads import view as view
    from store.execution_reads import views as views
    from store.execution_records import Attempt as Attempt
    from store.execution_records import FailedPass as FailedPass
    from store.execution_records import Observation as Observation
    from store.execution_records import Outcome as Outcome
    from store.groupcommit import Withdrawn as Withdrawn
    from store.groupcommit import answering_a_person as answering_a_person
    from store.groupcommit.contract import Pending as Pending
    from store.groupcommit.pg_writer import asyncpg_dsn as asyncpg_dsn
    from store.inbox import ANSWERED as ANSWERED
    from store.inbox import FAILED as FAILED
    from store.inbox import KEY_CHARS as KEY_CHARS
    from store.inbox import RECEIVED as RECEIVED
    from store.inbox import Inbox as Inbox
    from store.inbox import InboxEntry as InboxEntry
    from store.inbox import stored_key as stored_key
    from store.inbox import without_secrets as without_secrets
    from store.inbox_failures import record_failure as record_failure
    from store.leases import Lease as Lease
    from store.leases import announce_leases as announce_leases
    from store.leases import release as release
    from store.lifecycle import IllegalTransition as IllegalTransition
    from store.migrate import current_revision as current_revision
    from store.migrate import head_revision as head_revision
    from store.migrate import upgrade as upgrade
    from store.opening import StoreNotMigrated as StoreNotMigrated
    from store.opening import open_store as open_store
    from store.operation_counts import card_delivery_failures as card_delivery_failures
    from store.operation_counts import change_mark as change_mark
    from store.operation_counts import unknown_outstanding as unknown_outstanding
    from store.operation_reads import claim_id as claim_id
    from store.paging import MAX_PAGE_SIZE as MAX_PAGE_SIZE
    from store.paging import InvalidCursor as InvalidCursor
    from store.paging import encode_cursor as encode_cursor
    from store.projection import UNTIL as UNTIL
    from store.projection import ApprovalView as ApprovalView
    from store.projection import OperationView as OperationView
    from store.projection import OutcomeView as OutcomeView
    from store.projection import Until as Until
    from store.projection import operation_view as operation_view
    from store.projection import reached as reached
    from store.proposals import LOCAL_WORLDS as LOCAL_WORLDS
    from store.proposals import ActiveClaim as ActiveClaim
    from store.proposals import Draft as Draft
    from store.proposals import RequestConflict as RequestConflict
    from store.reasons import Reason as Reason
    from store.records import Confirmation as Confirmation
    from store.records import Operation as Operation
    from store.reminders import ReminderLedger as ReminderLedger
    from store.reservations import Exposure as Exposure
    from store.reservations import ReservationRefused as ReservationRefused
    from store.signals import Signal as Signal
    from store.signals import record_signal as record_signal
    from store.signals import signal_of as signal_of
    from store.vocabulary import CardAction as CardAction
    from store.vocabulary import CardDelivery as CardDelivery
    from store.vocabulary import Channel as Channel
    from store.vocabulary import ClickAction as ClickAction
    from store.vocabulary import DeliveryState as DeliveryState
    from store.vocabulary import Entry as Entry
    from store.vocabulary import Event as Event
    from store.vocabulary import Execution as Execution
    from store.vocabulary import InboxStatus as InboxStatus
    from store.vocabulary import ReservationState as ReservationState
    from store.vocabulary import Stage as Stage
    from store.vocabulary import State as State
    from store.vocabulary import Tone as Tone
    from store.vocabulary import World as World
    from store.web_sessions import SIGN_IN_TTL_S as SIGN_IN_TTL_S
    from store.web_sessions import WebSession as WebSession
    from store.web_sessions import WebSessions as WebSessions

    # exported under other names (`_RENAMED` below says why)
    attention_counts = _counts
    attention_groups = _attention

# internals still used outside: by bench/ and tests/ only
if TYPE_CHECKING:
    from store.claim_sql import PG_CLAIM as PG_CLAIM
    from store.claim_sql import SQLITE_AUDIT as SQLITE_AUDIT
    from store.claim_sql import SQLITE_CLAIM as SQLITE_CLAIM
    from store.claim_sql import SQLITE_CONFIRMATION as SQLITE_CONFIRMATION
    from store.claim_sql import SQLITE_UPDATE as SQLITE_UPDATE
    from store.claim_sql import claim_intent as claim_intent
    from store.claim_sql import claim_params as claim_params
    from store.claim_sql import claim_statements as claim_statements
    from store.click_sql import ENTRY_INSERT as ENTRY_INSERT
    from store.groupcommit import GroupWriter as GroupWriter
    from store.groupcommit import Intent as Intent
    from store.groupcommit import Statement as Statement
    from store.groupcommit import WriterStats as WriterStats
    from store.groupcommit import open_writer as open_writer
    from store.groupcommit.pg_writer import positional as positional
    from store.groupcommit.sqlite_writer import run_intent as run_intent
    from store.models import AuditRow as AuditRow
    from store.models import CardDeliveryRow as CardDeliveryRow
    from store.models import ClaimRow as ClaimRow
    from store.models import ConfirmationRow as ConfirmationRow
    from store.models import DeliveryRow as DeliveryRow
    from store.models import InboxRow as InboxRow
    from store.models import OperationRow as OperationRow
    from store.session_rows import WebSessionRow as WebSessionRow
    from store.session_rows import WebSignInRow as WebSignInRow

# name -> the module that owns it, loaded on first use (PEP 562)
_OWNER: dict[str, str] = {
    # the operation authority: opens, claims, decides, reads
    "Store": "store.authority",
    # opening a store (SQLite upgrades itself, PostgreSQL must be at head)
    "StoreNotMigrated": "store.opening",
    "open_store": "store.opening",
    # the engines of the two backends
    "create_engine": "store.engine",
    "is_sqlite": "store.engine",
    # the schema's migrations
    "current_revision": "store.migrate",
    "head_revision": "store.migrate",
    "upgrade": "store.migrate",
    # the vocabulary: every state and status the store keeps
    "CardAction": "store.vocabulary",
    "CardDelivery": "store.vocabulary",
    "Channel": "store.vocabulary",
    "ClickAction": "store.vocabulary",
    "DeliveryState": "store.vocabulary",
    "Entry": "store.vocabulary",
    "Event": "store.vocabulary",
    "Execution": "store.vocabulary",
    "InboxStatus": "store.vocabulary",
    "ReservationState": "store.vocabulary",
    "Stage": "store.vocabulary",
    "State": "store.vocabulary",
    "Tone": "store.vocabulary",
    "World": "store.vocabulary",
    # the lifecycle's transition table
    "IllegalTransition": "store.lifecycle",
    # refusal reason codes (persisted, CHECK-constrained)
    "Reason": "store.reasons",
    # canonical JSON, the bytes every digest is computed over
    "MAX_ENVELOPE_DEPTH": "store.canonical",
    "MAX_JSON_DEPTH": "store.canonical",
    "EncodedObject": "store.canonical",
    "canonical_json": "store.canonical",
    "float_paths": "store.canonical",
    "loads_strict": "store.canonical",
    "record_json": "store.canonical",
    "sha256_hex": "store.canonical",
    "too_deep": "store.canonical",
    # the operation envelope and its confirm digest
    "Approval": "store.envelope",
    "Audience": "store.envelope",
    "CallbackRoute": "store.envelope",
    "Conversation": "store.envelope",
    "Source": "store.envelope",
    # the read models the store hands out
    "Confirmation": "store.records",
    "Operation": "store.records",
    # a proposal as values, and filing it
    "LOCAL_WORLDS": "store.proposals",
    "ActiveClaim": "store.proposals",
    "Draft": "store.proposals",
    "RequestConflict": "store.proposals",
    # a click's decision as values: the click and the decision results
    "CLOSED_STATE_REASONS": "store.decisions",
    "Claimed": "store.decisions",
    "Click": "store.decisions",
    "Counted": "store.decisions",
    "Decided": "store.decisions",
    "Refused": "store.decisions",
    "refusal_reason": "store.decisions",
    # a click's first write (its inbox entry and its decision)
    "ClickWrites": "store.clicks",
    "FirstWrite": "store.clicks",
    "PendingClick": "store.clicks",
    # time-boxed auto-send
    "AUTO_OPERATOR": "store.auto_send",
    "auto_send_due": "store.auto_send",
    "claim_by_clock": "store.auto_send",
    "disarm_disallowed": "store.auto_send",
    # what concludes an operation for its proposer
    "CHANGES_REQUESTED": "store.conclusions",
    "DECLINED": "store.conclusions",
    "EXPIRED": "store.conclusions",
    "closing_outcome": "store.conclusions",
    # the execution ledger: attempts, reservations, outcomes
    "ExecutionLedger": "store.execution",
    # what an executor pass records, as values
    "Attempt": "store.execution_records",
    "FailedPass": "store.execution_records",
    "Observation": "store.execution_records",
    "Outcome": "store.execution_records",
    # exposure reservations against an account's budget
    "Exposure": "store.reservations",
    "ReservationRefused": "store.reservations",
    # the card ledger: card delivery state
    "CardLedger": "store.cards",
    # the delivery ledger: conclusions going back to proposers
    "Delivery": "store.deliveries",
    "DeliveryLedger": "store.deliveries",
    # the reminder ledger
    "ReminderLedger": "store.reminders",
    # the ingress inbox
    "ANSWERED": "store.inbox",
    "FAILED": "store.inbox",
    "KEY_CHARS": "store.inbox",
    "RECEIVED": "store.inbox",
    "Inbox": "store.inbox",
    "InboxEntry": "store.inbox",
    "stored_key": "store.inbox",
    "without_secrets": "store.inbox",
    # an ingress entry recorded as failed
    "record_failure": "store.inbox_failures",
    # inbound signals (texts in a message destination's chat)
    "Signal": "store.signals",
    "record_signal": "store.signals",
    "signal_of": "store.signals",
    # leasing due rows
    "Lease": "store.leases",
    "announce_leases": "store.leases",
    "release": "store.leases",
    # wake-ups across replicas
    "DueListener": "store.events",
    # dashboard sessions and sign-ins
    "SIGN_IN_TTL_S": "store.web_sessions",
    "WebSession": "store.web_sessions",
    "WebSessions": "store.web_sessions",
    # projection readers: the one versioned view of an operation
    "UNTIL": "store.projection",
    "ApprovalView": "store.projection",
    "OperationView": "store.projection",
    "OutcomeView": "store.projection",
    "Until": "store.projection",
    "operation_view": "store.projection",
    "reached": "store.projection",
    # projection readers: an operation's view with what execution recorded
    "view": "store.execution_reads",
    "views": "store.execution_reads",
    # reads of operations
    "claim_id": "store.operation_reads",
    # the dashboard's reads: what needs a person, recent, search
    "AWAITING": "store.attention",
    "SEARCH_MAX_CHARS": "store.attention",
    "UNKNOWN": "store.attention",
    "UNRESOLVED": "store.attention",
    "attention_counts": "store.attention",
    "attention_groups": "store.attention",
    "recent": "store.attention",
    "search": "store.attention",
    # paging through operations
    "MAX_PAGE_SIZE": "store.paging",
    "InvalidCursor": "store.paging",
    "encode_cursor": "store.paging",
    # the counts health, metrics and the dashboard's long poll read
    "card_delivery_failures": "store.operation_counts",
    "change_mark": "store.operation_counts",
    "unknown_outstanding": "store.operation_counts",
    # the write path as entries and workers use it: a click's card as shown, an auto-send's
    # rules, the writer's lanes and promises, a PostgreSQL URL's DSN
    "ShownCard": "store.click_sql",
    "AutoRules": "store.claim_sql",
    "Withdrawn": "store.groupcommit",
    "answering_a_person": "store.groupcommit",
    "Pending": "store.groupcommit.contract",
    "asyncpg_dsn": "store.groupcommit.pg_writer",
    # ---- internals still used outside: by bench/ and tests/ only (tests/store/
    # test_front_door.py holds that) ----
    # SQLAlchemy tables
    "AuditRow": "store.models",
    "CardDeliveryRow": "store.models",
    "ClaimRow": "store.models",
    "ConfirmationRow": "store.models",
    "DeliveryRow": "store.models",
    "InboxRow": "store.models",
    "OperationRow": "store.models",
    # SQLAlchemy tables of the dashboard's sign-in
    "WebSessionRow": "store.session_rows",
    "WebSignInRow": "store.session_rows",
    # the claim's hand-written SQL
    "PG_CLAIM": "store.claim_sql",
    "SQLITE_AUDIT": "store.claim_sql",
    "SQLITE_CLAIM": "store.claim_sql",
    "SQLITE_CONFIRMATION": "store.claim_sql",
    "SQLITE_UPDATE": "store.claim_sql",
    "claim_intent": "store.claim_sql",
    "claim_params": "store.claim_sql",
    "claim_statements": "store.claim_sql",
    # a click's other writes as hand-written SQL
    "ENTRY_INSERT": "store.click_sql",
    # group commit: writers and intents
    "GroupWriter": "store.groupcommit",
    "Intent": "store.groupcommit",
    "Statement": "store.groupcommit",
    "WriterStats": "store.groupcommit",
    "open_writer": "store.groupcommit",
    # group commit: the PostgreSQL writer
    "positional": "store.groupcommit.pg_writer",
    # group commit: the SQLite writer
    "run_intent": "store.groupcommit.sqlite_writer",
}

# Exported under another name: `store.attention` is also a module, and importing it sets the
# package attribute `attention`, which would shadow a function exported under that name.
_RENAMED: dict[str, str] = {"attention_counts": "counts", "attention_groups": "attention"}

__all__ = sorted(_OWNER)

if not TYPE_CHECKING:
    # Hidden from mypy, which reads the imports above: a name missing there stays an error.
    def __getattr__(name: str) -> object:
        try:
            module = _OWNER[name]
        except KeyError:
            raise AttributeError(f"module 'store' has no attribute {name!r}") from None
        value = getattr(import_module(module), _RENAMED.get(name, name))
        globals()[name] = value  # the next use is a plain lookup
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
