"""One vocabulary the database enforces: whoever writes a state, the database checks it.

Every write here is SQL straight at the database, never through the store's code: an
unknown state is refused by a CHECK constraint, a second claim or a second conclusion of a
stage by a unique index, and nothing is stored. Every word of each vocabulary is accepted,
so a value added to an enum without its migration fails here.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Table, insert, select, text
from sqlalchemy.exc import IntegrityError
from ulid import ULID

from store.authority.envelope import Conversation, Source
from store.authority.records import Operation
from store.authority.store import Store
from store.claims.decisions import Claimed, Click
from store.execution.execution_ledger import ExecutionLedger
from store.execution.records import Observation
from store.schema.tables import (
    AccountRow,
    Base,
    ClaimRow,
    ConfirmationRow,
    DeliveryRow,
    OperationRow,
)
from store.vocabulary import CHECKED, Execution, Stage
from tests.support.factories import dispatching, offered

# short enough for every checked column (outcomes.tone is String(8)): the CHECK must refuse it
UNKNOWN_WORD = "bogus"
ACCOUNT = "acct-vocabulary"
NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def _new_id() -> str:
    return str(ULID())


def _child_row(table: str, operation_id: str) -> dict[str, Any]:
    """A valid row of `table` for `operation_id` (unique keys fresh on every call)."""
    digest = _new_id().lower().ljust(64, "0")
    rows: dict[str, dict[str, Any]] = {
        "attempts": {
            "id": _new_id(),
            "operation_id": operation_id,
            "client_id": f"cs-{operation_id}",
            "recorded_at": NOW,
        },
        "reservations": {
            "operation_id": operation_id,
            "account": ACCOUNT,
            "amount": "1",
            "state": "active",
            "created_at": NOW,
        },
        "outcomes": {
            "operation_id": operation_id,
            "stage": "initial",
            "status": "any domain word",
            "detail": "{}",
            "outcome_digest": digest,
            "observed_at": NOW,
            "final": True,
            "tone": "good",
            "words": '{"en":"Done","zh":"完成"}',
        },
        "deliveries": {
            "id": _new_id(),
            "operation_id": operation_id,
            "channel": "reply",
            "stage": "initial",
            "outcome_digest": digest,
            "state": "pending",
            "attempts": 0,
            "created_at": NOW,
        },
        "inbox": {
            "kind": "callback",
            "key": _new_id(),
            "received_at": NOW,
            "payload": "{}",
            "status": "received",
            "tries": 0,
        },
        "card_deliveries": {
            "operation_id": operation_id,
            "version": 1,
            "action": "send",
            "at": NOW,
            "ok": True,
        },
        "confirmations": {
            "operation_id": operation_id,
            "at": NOW,
            "action": "reject",  # never the counted kind: no unique index in the way
            "operator_open_id": f"ou_{_new_id().lower()}",
            "digest": digest,
            "accepted": False,
            "entry": "lark",
        },
    }
    return rows[table]


async def _row(store: Store, table: str, operation: Operation) -> dict[str, Any]:
    if table != "operations":
        return _child_row(table, operation.id)
    async with store.read() as conn:
        found = (
            await conn.execute(
                select(OperationRow.__table__).where(OperationRow.id == operation.id)
            )
        ).one()
    return {**found._asdict(), "id": _new_id(), "source_request_id": _new_id()}


async def _insert(store: Store, table: Table, values: dict[str, Any]) -> Any:
    async with store.engine.begin() as conn:
        key = await conn.execute(insert(table).values(**values).returning(*table.primary_key))
        return key.scalar_one()


async def _set(store: Store, table: Table, column: str, value: str, key: Any) -> None:
    [pk] = table.primary_key
    async with store.engine.begin() as conn:
        await conn.execute(
            text(f"UPDATE {table.name} SET {column} = :value WHERE {pk.name} = :key"),
            {"value": value, "key": key},
        )


async def _rows_of(store: Store, table: Table) -> list[Any]:
    async with store.engine.connect() as conn:
        return list((await conn.execute(select(table).order_by(*table.primary_key))).all())


@pytest.mark.parametrize(
    ("table", "column"), sorted(CHECKED), ids=[f"{t}.{c}" for t, c in sorted(CHECKED)]
)
async def test_the_database_refuses_a_word_outside_the_vocabulary(
    store: Store, table: str, column: str
) -> None:
    holder, other = await offered(store), await offered(store)
    async with store.engine.begin() as conn:
        await conn.execute(insert(AccountRow).values(account=ACCOUNT, version=0))
    rows = Base.metadata.tables[table]
    key = await _insert(store, rows, await _row(store, table, holder))
    vocabulary = list(CHECKED[(table, column)])
    for word in vocabulary:  # every word is accepted: an enum never outgrows its constraint
        await _set(store, rows, column, word.value, key)
    before = await _rows_of(store, rows)

    with pytest.raises(IntegrityError, match=f"ck_{table}_{column}"):
        await _set(store, rows, column, UNKNOWN_WORD, key)
    with pytest.raises(IntegrityError, match=f"ck_{table}_{column}"):
        await _insert(store, rows, {**await _row(store, table, other), column: UNKNOWN_WORD})

    after = await _rows_of(store, rows)
    assert after == before, "nothing was written"
    assert getattr(after[-1], column) == vocabulary[-1].value


async def claimed(store: Store, **overrides: Any) -> Claimed:
    op = await offered(store, **overrides)
    result = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(result, Claimed)
    return result


async def test_a_second_claim_written_by_raw_sql_is_refused(store: Store) -> None:
    first = await claimed(store)
    async with store.read() as conn:
        confirmation = (
            await conn.execute(
                select(ConfirmationRow.id).where(ConfirmationRow.operation_id == first.operation.id)
            )
        ).scalar_one()
    with pytest.raises(IntegrityError, match=r"uq_claims_operation_id|claims\.operation_id"):
        await _insert(
            store,
            ClaimRow.__table__,
            {
                "id": _new_id(),
                "operation_id": first.operation.id,
                "confirmation_id": confirmation,
                "operator_open_id": "ou_mallory",
                "claimed_at": NOW,
            },
        )
    claims = await _rows_of(store, ClaimRow.__table__)
    assert [(c.id, c.operator_open_id) for c in claims] == [(first.claim_id, "ou_alice")]


async def test_a_stage_concludes_once_even_written_by_raw_sql(store: Store) -> None:
    request_id = _new_id()
    source = Source("dev-agent", request_id, conversation=Conversation("oc_ops", "om_thread"))
    op = (await claimed(store, request_id=request_id, source=source)).operation
    ledger = ExecutionLedger(store)
    await dispatching(store, op.id)
    await ledger.record_observation(
        op.id,
        Observation(Stage.INITIAL, "working", Execution.SUBMITTED, concludes=False),
    )
    assert await _rows_of(store, DeliveryRow.__table__) == [], "progress concludes nothing"
    await ledger.record_observation(
        op.id,
        Observation(Stage.INITIAL, "done", Execution.COMPLETED),
    )
    [concluded] = await _rows_of(store, DeliveryRow.__table__)

    # the store's own second conclusion of the stage is skipped by the database
    await ledger.record_observation(
        op.id,
        Observation(Stage.INITIAL, "done again", Execution.COMPLETED, {"n": 2}),
    )
    with pytest.raises(
        IntegrityError, match=r"uq_deliveries_operation_id_channel_stage|deliveries\.stage"
    ):
        await _insert(store, DeliveryRow.__table__, _child_row("deliveries", op.id))
    assert await _rows_of(store, DeliveryRow.__table__) == [concluded]
    assert (concluded.channel, concluded.stage) == ("reply", "initial")
