"""Every hot read is bounded by its page, not by history (issue 34): each query below is the
SQL the real store function issues (captured as it runs on a store with rows of every kind),
EXPLAINed on the backend under test.

The rule, per statement that touches a history table (tests/support/query_plans.py HISTORY):
- SQLite (`EXPLAIN QUERY PLAN`): no `SCAN <history table>`. `SEARCH` (a seek on the index's
  leading columns: equality, range or row value) is fine. `SCAN t USING [COVERING] INDEX i`
  (a walk from one end of i) is fine only when i is partial (it holds only what is still
  outstanding) or the query names i in `walks`: no condition on t at all, ordered as i is,
  under a LIMIT, so it stops after the page (recent activity, the change mark, the first
  page of an unfiltered list).
- PostgreSQL, with `SET LOCAL enable_seqscan = off` (else a small table is seq-scanned by
  choice; with no usable index PostgreSQL still seq-scans): no `Seq Scan` on a history
  table, and an index scan without an `Index Cond` follows the same walk rule as above.
  For a page also `enable_sort = off`: a `Sort` left in its plan means no index gives
  its order.
- A page a person pages through (`paged`: the API's list, /ops/all, recent) comes in its
  index's order: no sort of what matched (`USE TEMP B-TREE`, `Sort`) unless a partial index
  bounds it. Elsewhere a sort is of what a seek found (one operation's rows, what is due
  now, a group's members) and is bounded by that seek.
- `uses`: indexes the plan must name, where a seek on a general index would still read
  every row of one key (every reservation an account ever had).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import insert

from bot.app.policy_record import record_policy
from bot.config import parse
from store import (
    AuditChain,
    AutoRules,
    CardLedger,
    DeliveryLedger,
    Draft,
    Execution,
    ExecutionLedger,
    ExportWindow,
    Exposure,
    Inbox,
    Observation,
    PolicyLedger,
    ReminderLedger,
    Retention,
    Stage,
    State,
    Store,
    auto_send_due,
    disarm_disallowed,
    prune,
)
from store.reads import attention, counts
from store.schema.tables import DeliveryRow
from tests.support.api import settings_data
from tests.support.factories import (
    claimed,
    dispatching,
    draft,
    message_draft_fields,
    offered,
    refused_by_budget,
)
from tests.support.query_plans import Allowed, captured, plan_problems

Call = Callable[[Store, dict[str, Any]], Awaitable[object]]
PRUNE_EVERYTHING_PAST = Retention(*(timedelta(0),) * 3, timedelta(minutes=30), timedelta(hours=12))


@dataclass(frozen=True)
class Case:
    call: Call
    allowed: Allowed = field(default_factory=Allowed)
    prepare: Call | None = None  # run before the capture: what the call needs in place


async def _history(store: Store) -> dict[str, Any]:
    """A little of everything that grows: open, finished, unknown, unresolved, refused cards,
    failed deliveries, reservations, inbox entries."""
    ledger = ExecutionLedger(store)
    for _ in range(3):
        await offered(store)
    done = []
    for status, execution in (
        ("filled", Execution.COMPLETED),
        ("unknown", Execution.SUBMISSION_UNKNOWN),
        ("unknown", Execution.SUBMISSION_UNKNOWN),
    ):
        op = await claimed(store)
        await dispatching(store, op.id)
        seen = Observation(Stage.INITIAL, status, execution, answers_attempt=True)
        done.append((op, await ledger.record_observation(op.id, seen)))
    unresolved, first = done[2]
    await ledger.record_observation(
        unresolved.id,
        Observation(
            Stage.RECONCILED,
            "unresolved",
            Execution.RECONCILED,
            reconciles=first.outcome_digest,
        ),
    )
    refused = await offered(store)
    await CardLedger(store).failed(refused.id, 1, "send", 500, "lark down", retry_in_s=None)
    row = {
        "id": f"d{done[0][0].id}"[:26],
        "operation_id": done[0][0].id,
        "channel": "webhook",
        "stage": "initial",
        "outcome_digest": "0" * 64,
        "state": "failed",
        "attempts": 8,
        "created_at": store.clock(),
    }
    await store.transact(lambda conn: conn.execute(insert(DeliveryRow).values(**row)))
    await Inbox(store).receive("callback", "ev-1", {"event": "one"})
    preflight = await claimed(store)  # the claim's own writes stay out of what is captured
    await ledger.begin_preflight(preflight.id)
    return {"op": done[0][0], "preflight": preflight}


async def _reserve(store: Store, seen: dict[str, Any]) -> object:
    ledger = ExecutionLedger(store)
    exposure = Exposure(
        "sim/sim-main", Decimal(10), Decimal(10**6), Decimal(0), store.clock() - timedelta(60)
    )
    return await ledger.reserve_and_mark(seen["preflight"].id, exposure, refused=refused_by_budget)


async def _api_next_page(store: Store, seen: dict[str, Any]) -> object:
    return await store.list_operations(proposer="dev-agent", limit=2, cursor=seen["cursor"])


async def _ops_all_next_page(store: Store, seen: dict[str, Any]) -> object:
    return await attention.search(store, limit=2, cursor=seen["cursor"])


async def _search_next_page(store: Store, seen: dict[str, Any]) -> object:
    return await attention.search(
        store, state=State.OUTCOME_OBSERVED, text="btc", limit=2, cursor=seen["cursor"], window=2
    )


async def _detail(store: Store, seen: dict[str, Any]) -> object:
    op_id = seen["op"].id
    return (
        await store.get(op_id),
        await store.confirmations(op_id),
        await store.audit(op_id),
        await ExecutionLedger(store).outcomes_for([op_id]),
        await ExecutionLedger(store).attempt(op_id),
        await CardLedger(store).history(op_id),
        await DeliveryLedger(store).find(operation_id=op_id),
    )


async def _recovery(store: Store, seen: dict[str, Any]) -> object:
    inbox = Inbox(store)
    return (
        await inbox.unanswered("callback", 100, received_before=store.clock()),
        await store.confirmation_of(seen["op"].id, "ev-1"),
    )


async def _linked(store: Store, _seen: dict[str, Any]) -> object:
    linked = await AuditChain(store).link()
    assert linked > 0
    return linked


async def _policy_recorded(store: Store, _seen: dict[str, Any]) -> object:
    """Two policy versions, each with its audit entry among the history's."""
    data = settings_data()
    await record_policy(store, parse(data), "config:a")
    data["audiences"][0]["required_confirmations"] = 2
    return await record_policy(store, parse(data), "config:a")


async def _exported(store: Store) -> object:
    """An export of the linked history, for one audience (its operations looked up)."""
    records: list[dict[str, Any]] = []
    await AuditChain(store).export(ExportWindow(audience="ops"), records.append)
    assert records and all(r["audience"] == "ops" for r in records if r["operation_id"])
    return records


NO_RULES = AutoRules({}, {})
# walks: no condition on the table, the index's order, a LIMIT
BY_CREATED = Allowed(walks=frozenset({"ix_operations_created_at_id"}), paged=True)
BY_UPDATED = Allowed(walks=frozenset({"ix_operations_updated_at_id"}), paged=True)
PAGED = Allowed(paged=True)
WINDOWED = Allowed(walks=frozenset({"ix_operations_created_at_id"}), paged=True)
CHAIN_PAGES = PAGED  # in chain_seq's unique index, from where the last page ended


def _message(request_id: str, text: str) -> Draft:
    return draft(request_id, **message_draft_fields(text), supersede_open=True)


async def _drafts_filed(store: Store, _seen: dict[str, Any]) -> object:
    await store.propose(_message("qp-first", "Hello Acme"))
    return await store.propose(_message("qp-second", "About invoice 7"))


CASES: dict[str, Case] = {
    # the dashboard (every page, and the long poll every 0.5 s per open page)
    "change_mark": Case(lambda s, _: counts.change_mark(s), BY_UPDATED),
    "recent": Case(lambda s, _: attention.recent(s), BY_UPDATED),
    **{
        f"group_{key}": Case(lambda s, _, key=key: attention.group(s, key))
        for key in attention.GROUPS
    },
    "ops_all_first_page": Case(lambda s, _: attention.search(s, limit=2), BY_CREATED),
    "ops_all_next_page": Case(_ops_all_next_page, PAGED),
    "ops_all_by_state": Case(
        lambda s, _: attention.search(s, state=State.OUTCOME_OBSERVED, limit=2), PAGED
    ),
    # a filter no index serves looks through a window of the newest (sorting only it)
    "ops_all_search": Case(lambda s, _: attention.search(s, text="btc", limit=2), WINDOWED),
    "ops_all_by_outcome": Case(
        lambda s, _: attention.search(s, outcome="filled", limit=2), WINDOWED
    ),
    "ops_all_search_by_state_next_page": Case(_search_next_page, WINDOWED),
    "operation_detail": Case(_detail),
    # /readyz, /metrics
    "unknown_outstanding": Case(lambda s, _: counts.unknown_outstanding(s)),
    "card_delivery_failures": Case(lambda s, _: counts.card_delivery_failures(s)),
    "card_backlog": Case(lambda s, _: CardLedger(s).backlog()),
    "deliveries_outstanding": Case(lambda s, _: DeliveryLedger(s).counts()),
    # the API's list and `countersign list`, the text command `pending`
    "api_first_page": Case(lambda s, _: s.list_operations(proposer="dev-agent", limit=2), PAGED),
    "api_next_page": Case(_api_next_page, PAGED),
    "text_pending": Case(
        lambda s, _: s.list_operations(state=State.AWAITING_CONFIRMATION, audiences={"ops"}),
        PAGED,
    ),
    # the executor's reservation, inside its write
    "reserve_and_mark": Case(
        _reserve, Allowed(uses=frozenset({"ix_reservations_account_state_released_at"}))
    ),
    # the workers' due scans (what they sort is what is due now)
    "card_lease": Case(lambda s, _: CardLedger(s).lease_due(5)),
    "exec_lease": Case(lambda s, _: ExecutionLedger(s).lease_due(5)),
    "exec_next_due": Case(lambda s, _: ExecutionLedger(s).next_due()),
    "delivery_lease": Case(lambda s, _: DeliveryLedger(s).lease_due(5)),
    "delivery_next_due": Case(lambda s, _: DeliveryLedger(s).next_due()),
    "reminder_lease": Case(lambda s, _: ReminderLedger(s).lease_due(5)),
    "expiry": Case(lambda s, _: s.expire_due()),
    "auto_send_due": Case(lambda s, _: _auto_send(s)),
    # an operator's "check again" (`countersign reconcile`), inside a write
    "reconcile_now": Case(lambda s, _: ExecutionLedger(s).reconcile_now()),
    # start-up: what recovery asks for
    "recovery": Case(_recovery),
    # the audit chainer, every second on every replica: what is still to link
    "audit_link": Case(lambda s, _: AuditChain(s).link()),
    "audit_unlinked": Case(lambda s, _: AuditChain(s).unlinked()),
    # `countersign audit verify --store|export`: the chain a page at a time, in its order
    "audit_verify": Case(lambda s, _: AuditChain(s).verify(), CHAIN_PAGES),
    "audit_export": Case(lambda s, _: _exported(s), CHAIN_PAGES, prepare=_linked),
    # `countersign prune`: each history table walked by its key, a page at a time
    "prune": Case(lambda s, _: prune(s, PRUNE_EVERYTHING_PAST)),
    # a message draft filed: the one open on its destination superseded, none being sent
    "draft_filed": Case(
        lambda s, _: s.propose(_message("qp-third", "Friday")), prepare=_drafts_filed
    ),
    # the same filing again (a retry): the drafts it superseded, read back from the audit log
    "draft_filed_again": Case(
        lambda s, _: s.propose(_message("qp-second", "About invoice 7")), prepare=_drafts_filed
    ),
    # `audit verify --store`: each policy version's audit entry, found by its subject
    "policy_check": Case(lambda s, _: PolicyLedger(s).check(), prepare=_policy_recorded),
}


async def _auto_send(store: Store) -> object:
    return await disarm_disallowed(store, NO_RULES), await auto_send_due(store, NO_RULES)


@pytest.mark.parametrize("name", list(CASES))
async def test_the_query_reads_no_history_table_whole(store: Store, name: str) -> None:
    seen = await _history(store)
    first = await store.list_operations(proposer="dev-agent", limit=2)
    seen["cursor"] = first.next_cursor
    case = CASES[name]
    if case.prepare is not None:
        await case.prepare(store, seen)
    async with captured(store) as capture:
        await case.call(store, seen)
    problems = await plan_problems(store, capture, case.allowed)
    assert not problems, "\n" + "\n".join(problems)
