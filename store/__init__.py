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

# Over 400 lines: one list of every name the store offers, each written twice (for the type
# checker, and for loading its module on first use); two lists would be two front doors.

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from store.audit.chain import GENESIS as GENESIS
    from store.audit.chain import ChainCheck as ChainCheck
    from store.audit.chain import entry_material as entry_material
    from store.audit.chain import link_hash as link_hash
    from store.audit.chain import link_pending as link_pending
    from store.audit.export import EXPORT_FIELDS as EXPORT_FIELDS
    from store.audit.export import ExportCheck as ExportCheck
    from store.audit.export import ExportWindow as ExportWindow
    from store.audit.export import check_export as check_export
    from store.audit.export import record_material as record_material
    from store.audit.ledger import AuditChain as AuditChain
    from store.audit.witness import Witness as Witness
    from store.audit.witness import witness_text as witness_text
    from store.audit.witness import witness_uuid as witness_uuid
    from store.audit.witness import witnessed_head as witnessed_head
    from store.authority.envelope import Approval as Approval
    from store.authority.envelope import Audience as Audience
    from store.authority.envelope import CallbackRoute as CallbackRoute
    from store.authority.envelope import Conversation as Conversation
    from store.authority.envelope import Source as Source
    from store.authority.proposals import LOCAL_WORLDS as LOCAL_WORLDS
    from store.authority.proposals import ActiveClaim as ActiveClaim
    from store.authority.proposals import Draft as Draft
    from store.authority.proposals import RequestConflict as RequestConflict
    from store.authority.records import Confirmation as Confirmation
    from store.authority.records import DelegatedRight as DelegatedRight
    from store.authority.records import Operation as Operation
    from store.authority.store import Store as Store
    from store.backend.due_listener import DueListener as DueListener
    from store.backend.engine import create_engine as create_engine
    from store.backend.engine import is_sqlite as is_sqlite
    from store.backend.leases import Lease as Lease
    from store.backend.leases import announce_leases as announce_leases
    from store.backend.leases import release as release
    from store.backend.opening import StoreNotMigrated as StoreNotMigrated
    from store.backend.opening import open_store as open_store
    from store.backend.reaching import CONNECT_TIMEOUT_S as CONNECT_TIMEOUT_S
    from store.backend.reaching import StoreUnreachable as StoreUnreachable
    from store.backend.reaching import postgresql_failure as postgresql_failure
    from store.backend.reaching import reaching as reaching
    from store.backend.reaching import sqlite_problem as sqlite_problem
    from store.cards.card_ledger import CardLedger as CardLedger
    from store.claims.auto_send import AUTO_OPERATOR as AUTO_OPERATOR
    from store.claims.auto_send import auto_send_due as auto_send_due
    from store.claims.auto_send import claim_by_clock as claim_by_clock
    from store.claims.auto_send import disarm_disallowed as disarm_disallowed

    # what the entries and workers use of the write path: a click's card as shown, a
    # time-boxed auto-send's rules, the writer's lanes and promises, a PostgreSQL URL's DSN
    from store.claims.claim_sql import AutoRules as AutoRules
    from store.claims.click_sql import ShownCard as ShownCard
    from store.claims.click_writes import ClickWrites as ClickWrites
    from store.claims.click_writes import FirstWrite as FirstWrite
    from store.claims.click_writes import PendingClick as PendingClick
    from store.claims.decisions import CLOSED_STATE_REASONS as CLOSED_STATE_REASONS
    from store.claims.decisions import Claimed as Claimed
    from store.claims.decisions import Click as Click
    from store.claims.decisions import Counted as Counted
    from store.claims.decisions import Decided as Decided
    from store.claims.decisions import Refused as Refused
    from store.claims.decisions import refusal_reason as refusal_reason
    from store.claims.exposure import Exposure as Exposure
    from store.claims.reservations import ReservationRefused as ReservationRefused
    from store.delegation.ledger import Delegation as Delegation
    from store.delegation.ledger import DelegationLedger as DelegationLedger
    from store.delegation.ledger import DelegationRefused as DelegationRefused
    from store.delegation.ledger import delegation_subject as delegation_subject
    from store.deliveries.conclusions import CHANGES_REQUESTED as CHANGES_REQUESTED
    from store.deliveries.conclusions import DECLINED as DECLINED
    from store.deliveries.conclusions import EXPIRED as EXPIRED
    from store.deliveries.conclusions import closing_outcome as closing_outcome
    from store.deliveries.delivery_ledger import Delivery as Delivery
    from store.deliveries.delivery_ledger import DeliveryLedger as DeliveryLedger
    from store.deliveries.reminder_ledger import ReminderLedger as ReminderLedger
    from store.execution.execution_ledger import ExecutionLedger as ExecutionLedger
    from store.execution.reads import view as view
    from store.execution.reads import views as views
    from store.execution.records import Attempt as Attempt
    from store.execution.records import FailedPass as FailedPass
    from store.execution.records import Observation as Observation
    from store.execution.records import Outcome as Outcome
    from store.groupcommit import Withdrawn as Withdrawn
    from store.groupcommit import answering_a_person as answering_a_person
    from store.groupcommit.contract import Pending as Pending
    from store.groupcommit.pg_writer import asyncpg_dsn as asyncpg_dsn
    from store.inbox.failures import record_failure as record_failure
    from store.inbox.inbox import ANSWERED as ANSWERED
    from store.inbox.inbox import FAILED as FAILED
    from store.inbox.inbox import KEY_CHARS as KEY_CHARS
    from store.inbox.inbox import RECEIVED as RECEIVED
    from store.inbox.inbox import Inbox as Inbox
    from store.inbox.inbox import InboxEntry as InboxEntry
    from store.inbox.inbox import payload_digest as payload_digest
    from store.inbox.inbox import stored_key as stored_key
    from store.inbox.inbox import without_secrets as without_secrets
    from store.inbox.signals import Signal as Signal
    from store.inbox.signals import record_signal as record_signal
    from store.inbox.signals import signal_of as signal_of
    from store.lifecycle import IllegalTransition as IllegalTransition
    from store.policy.ledger import POLICY_ACTOR_PREFIX as POLICY_ACTOR_PREFIX
    from store.policy.ledger import POLICY_EVENT as POLICY_EVENT
    from store.policy.ledger import PolicyLedger as PolicyLedger
    from store.policy.ledger import PolicyLine as PolicyLine
    from store.policy.ledger import PolicyVersion as PolicyVersion
    from store.policy.ledger import policy_subject as policy_subject
    from store.reads.attention import AWAITING as AWAITING
    from store.reads.attention import SEARCH_MAX_CHARS as SEARCH_MAX_CHARS
    from store.reads.attention import UNKNOWN as UNKNOWN
    from store.reads.attention import UNRESOLVED as UNRESOLVED
    from store.reads.attention import attention as _attention
    from store.reads.attention import counts as _counts
    from store.reads.attention import recent as recent
    from store.reads.attention import search as search
    from store.reads.counts import card_delivery_failures as card_delivery_failures
    from store.reads.counts import change_mark as change_mark
    from store.reads.counts import unknown_outstanding as unknown_outstanding
    from store.reads.operations import claim_id as claim_id
    from store.reads.paging import MAX_PAGE_SIZE as MAX_PAGE_SIZE
    from store.reads.paging import InvalidCursor as InvalidCursor
    from store.reads.paging import encode_cursor as encode_cursor
    from store.reads.projection import UNTIL as UNTIL
    from store.reads.projection import ApprovalView as ApprovalView
    from store.reads.projection import ConfirmerView as ConfirmerView
    from store.reads.projection import OperationView as OperationView
    from store.reads.projection import OutcomeView as OutcomeView
    from store.reads.projection import Until as Until
    from store.reads.projection import operation_view as operation_view
    from store.reads.projection import reached as reached
    from store.reads.summary import StoreSummary as StoreSummary
    from store.reads.summary import store_summary as store_summary
    from store.retention.prune import PruneReport as PruneReport
    from store.retention.prune import Retention as Retention
    from store.retention.prune import prune as prune
    from store.retention.prune import pruned_payload as pruned_payload
    from store.schema.inventory import tables_children_first as tables_children_first
    from store.schema.migrate import current_revision as current_revision
    from store.schema.migrate import head_revision as head_revision
    from store.schema.migrate import upgrade as upgrade
    from store.sessions.web_sessions import SIGN_IN_TTL_S as SIGN_IN_TTL_S
    from store.sessions.web_sessions import WebSession as WebSession
    from store.sessions.web_sessions import WebSessions as WebSessions
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

    # exported under other names (`_RENAMED` below says why)
    attention_counts = _counts
    attention_groups = _attention

# internals still used outside: by bench/ and tests/ only
if TYPE_CHECKING:
    from store.claims.claim_sql import PG_CLAIM as PG_CLAIM
    from store.claims.claim_sql import SQLITE_AUDIT as SQLITE_AUDIT
    from store.claims.claim_sql import SQLITE_CLAIM as SQLITE_CLAIM
    from store.claims.claim_sql import SQLITE_CONFIRMATION as SQLITE_CONFIRMATION
    from store.claims.claim_sql import SQLITE_UPDATE as SQLITE_UPDATE
    from store.claims.claim_sql import claim_intent as claim_intent
    from store.claims.claim_sql import claim_params as claim_params
    from store.claims.claim_sql import claim_statements as claim_statements
    from store.claims.click_sql import ENTRY_INSERT as ENTRY_INSERT
    from store.groupcommit import GroupWriter as GroupWriter
    from store.groupcommit import Intent as Intent
    from store.groupcommit import Statement as Statement
    from store.groupcommit import WriterStats as WriterStats
    from store.groupcommit import open_writer as open_writer
    from store.groupcommit.pg_writer import positional as positional
    from store.groupcommit.sqlite_writer import run_intent as run_intent
    from store.schema.tables import AuditChainRow as AuditChainRow
    from store.schema.tables import AuditRow as AuditRow
    from store.schema.tables import CardDeliveryRow as CardDeliveryRow
    from store.schema.tables import ClaimRow as ClaimRow
    from store.schema.tables import ConfirmationRow as ConfirmationRow
    from store.schema.tables import DeliveryRow as DeliveryRow
    from store.schema.tables import InboxRow as InboxRow
    from store.schema.tables import OperationRow as OperationRow
    from store.sessions.session_rows import WebSessionRow as WebSessionRow
    from store.sessions.session_rows import WebSignInRow as WebSignInRow

# name -> the module that owns it, loaded on first use (PEP 562)
_OWNER: dict[str, str] = {
    "AuditChain": "store.audit.ledger",
    "ChainCheck": "store.audit.chain",
    "GENESIS": "store.audit.chain",
    "entry_material": "store.audit.chain",
    "link_hash": "store.audit.chain",
    "link_pending": "store.audit.chain",
    # an export of the chain, and its check without the store
    "EXPORT_FIELDS": "store.audit.export",
    "ExportCheck": "store.audit.export",
    "ExportWindow": "store.audit.export",
    "check_export": "store.audit.export",
    "record_material": "store.audit.export",
    # the chain head witnessed in Lark: the line, reading it back, its uuid
    "Witness": "store.audit.witness",
    "witness_text": "store.audit.witness",
    "witness_uuid": "store.audit.witness",
    "witnessed_head": "store.audit.witness",
    # delegated approval rights
    "DelegatedRight": "store.authority.records",
    "Delegation": "store.delegation.ledger",
    "DelegationLedger": "store.delegation.ledger",
    "DelegationRefused": "store.delegation.ledger",
    "delegation_subject": "store.delegation.ledger",
    # retention: `countersign prune`
    "PruneReport": "store.retention.prune",
    "Retention": "store.retention.prune",
    "prune": "store.retention.prune",
    "pruned_payload": "store.retention.prune",
    # the effective policy's versions
    "POLICY_ACTOR_PREFIX": "store.policy.ledger",
    "POLICY_EVENT": "store.policy.ledger",
    "PolicyLedger": "store.policy.ledger",
    "PolicyLine": "store.policy.ledger",
    "PolicyVersion": "store.policy.ledger",
    "policy_subject": "store.policy.ledger",
    # every table, children first (emptying or copying a store whole)
    "tables_children_first": "store.schema.inventory",
    # the operation authority: opens, claims, decides, reads
    "Store": "store.authority.store",
    # opening a store (SQLite upgrades itself, PostgreSQL must be at head)
    "StoreNotMigrated": "store.backend.opening",
    "open_store": "store.backend.opening",
    # why a store could not be reached, in the words config check uses
    "CONNECT_TIMEOUT_S": "store.backend.reaching",
    "StoreUnreachable": "store.backend.reaching",
    "postgresql_failure": "store.backend.reaching",
    "reaching": "store.backend.reaching",
    "sqlite_problem": "store.backend.reaching",
    # the engines of the two backends
    "create_engine": "store.backend.engine",
    "is_sqlite": "store.backend.engine",
    # the schema's migrations
    "current_revision": "store.schema.migrate",
    "head_revision": "store.schema.migrate",
    "upgrade": "store.schema.migrate",
    # the vocabulary: every state and status the store keeps
    "CardDelivery": "store.vocabulary",
    "CardAction": "store.vocabulary",
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
    # the operation envelope and its confirm digest
    "Approval": "store.authority.envelope",
    "Audience": "store.authority.envelope",
    "CallbackRoute": "store.authority.envelope",
    "Conversation": "store.authority.envelope",
    "Source": "store.authority.envelope",
    # the read models the store hands out
    "Confirmation": "store.authority.records",
    "Operation": "store.authority.records",
    # a proposal as values, and filing it
    "LOCAL_WORLDS": "store.authority.proposals",
    "ActiveClaim": "store.authority.proposals",
    "Draft": "store.authority.proposals",
    "RequestConflict": "store.authority.proposals",
    # a click's decision as values: the click and the decision results
    "CLOSED_STATE_REASONS": "store.claims.decisions",
    "Claimed": "store.claims.decisions",
    "Click": "store.claims.decisions",
    "Counted": "store.claims.decisions",
    "Decided": "store.claims.decisions",
    "Refused": "store.claims.decisions",
    "refusal_reason": "store.claims.decisions",
    # a click's first write (its inbox entry and its decision)
    "ClickWrites": "store.claims.click_writes",
    "FirstWrite": "store.claims.click_writes",
    "PendingClick": "store.claims.click_writes",
    # time-boxed auto-send
    "AUTO_OPERATOR": "store.claims.auto_send",
    "auto_send_due": "store.claims.auto_send",
    "claim_by_clock": "store.claims.auto_send",
    "disarm_disallowed": "store.claims.auto_send",
    # what concludes an operation for its proposer
    "CHANGES_REQUESTED": "store.deliveries.conclusions",
    "DECLINED": "store.deliveries.conclusions",
    "EXPIRED": "store.deliveries.conclusions",
    "closing_outcome": "store.deliveries.conclusions",
    # the execution ledger: attempts, reservations, outcomes
    "ExecutionLedger": "store.execution.execution_ledger",
    # what an executor pass records, as values
    "Attempt": "store.execution.records",
    "FailedPass": "store.execution.records",
    "Observation": "store.execution.records",
    "Outcome": "store.execution.records",
    # exposure reservations against an account's budget
    "Exposure": "store.claims.exposure",
    "ReservationRefused": "store.claims.reservations",
    # the card ledger: card delivery state
    "CardLedger": "store.cards.card_ledger",
    # the delivery ledger: conclusions going back to proposers
    "Delivery": "store.deliveries.delivery_ledger",
    "DeliveryLedger": "store.deliveries.delivery_ledger",
    # the reminder ledger
    "ReminderLedger": "store.deliveries.reminder_ledger",
    # the ingress inbox
    "ANSWERED": "store.inbox.inbox",
    "FAILED": "store.inbox.inbox",
    "KEY_CHARS": "store.inbox.inbox",
    "RECEIVED": "store.inbox.inbox",
    "Inbox": "store.inbox.inbox",
    "InboxEntry": "store.inbox.inbox",
    "stored_key": "store.inbox.inbox",
    "payload_digest": "store.inbox.inbox",
    "without_secrets": "store.inbox.inbox",
    # an ingress entry recorded as failed
    "record_failure": "store.inbox.failures",
    # inbound signals (texts in a message destination's chat)
    "Signal": "store.inbox.signals",
    "record_signal": "store.inbox.signals",
    "signal_of": "store.inbox.signals",
    # leasing due rows
    "Lease": "store.backend.leases",
    "announce_leases": "store.backend.leases",
    "release": "store.backend.leases",
    # wake-ups across replicas
    "DueListener": "store.backend.due_listener",
    # dashboard sessions and sign-ins
    "SIGN_IN_TTL_S": "store.sessions.web_sessions",
    "WebSession": "store.sessions.web_sessions",
    "WebSessions": "store.sessions.web_sessions",
    # projection readers: the one versioned view of an operation
    "UNTIL": "store.reads.projection",
    "ApprovalView": "store.reads.projection",
    "ConfirmerView": "store.reads.projection",
    "OperationView": "store.reads.projection",
    "OutcomeView": "store.reads.projection",
    "Until": "store.reads.projection",
    "operation_view": "store.reads.projection",
    "reached": "store.reads.projection",
    # projection readers: an operation's view with what execution recorded
    "view": "store.execution.reads",
    "views": "store.execution.reads",
    # reads of operations
    "claim_id": "store.reads.operations",
    # the dashboard's reads: what needs a person, recent, search
    "AWAITING": "store.reads.attention",
    "SEARCH_MAX_CHARS": "store.reads.attention",
    "UNKNOWN": "store.reads.attention",
    "UNRESOLVED": "store.reads.attention",
    "attention_counts": "store.reads.attention",
    "attention_groups": "store.reads.attention",
    "recent": "store.reads.attention",
    "search": "store.reads.attention",
    # paging through operations
    "MAX_PAGE_SIZE": "store.reads.paging",
    "InvalidCursor": "store.reads.paging",
    "encode_cursor": "store.reads.paging",
    # the counts health, metrics and the dashboard's long poll read
    "card_delivery_failures": "store.reads.counts",
    "change_mark": "store.reads.counts",
    "unknown_outstanding": "store.reads.counts",
    # what /readyz and /metrics show from the store, refreshed off the request path
    "StoreSummary": "store.reads.summary",
    "store_summary": "store.reads.summary",
    # the write path as entries and workers use it: a click's card as shown, an auto-send's
    # rules, the writer's lanes and promises, a PostgreSQL URL's DSN
    "ShownCard": "store.claims.click_sql",
    "AutoRules": "store.claims.claim_sql",
    "Withdrawn": "store.groupcommit",
    "answering_a_person": "store.groupcommit",
    "Pending": "store.groupcommit.contract",
    "asyncpg_dsn": "store.groupcommit.pg_writer",
    # ---- internals still used outside: by bench/ and tests/ only (tests/store/
    # test_front_door.py holds that) ----
    # SQLAlchemy tables
    "AuditRow": "store.schema.tables",
    "AuditChainRow": "store.schema.tables",
    "CardDeliveryRow": "store.schema.tables",
    "ClaimRow": "store.schema.tables",
    "ConfirmationRow": "store.schema.tables",
    "DeliveryRow": "store.schema.tables",
    "InboxRow": "store.schema.tables",
    "OperationRow": "store.schema.tables",
    # SQLAlchemy tables of the dashboard's sign-in
    "WebSessionRow": "store.sessions.session_rows",
    "WebSignInRow": "store.sessions.session_rows",
    # the claim's hand-written SQL
    "PG_CLAIM": "store.claims.claim_sql",
    "SQLITE_AUDIT": "store.claims.claim_sql",
    "SQLITE_CLAIM": "store.claims.claim_sql",
    "SQLITE_CONFIRMATION": "store.claims.claim_sql",
    "SQLITE_UPDATE": "store.claims.claim_sql",
    "claim_intent": "store.claims.claim_sql",
    "claim_params": "store.claims.claim_sql",
    "claim_statements": "store.claims.claim_sql",
    # a click's other writes as hand-written SQL
    "ENTRY_INSERT": "store.claims.click_sql",
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

# Exported under names that say what they count and group: bare `counts` and `attention` say
# too little beside the store's other names.
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
