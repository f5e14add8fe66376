"""An outcome row keeps what its status says (issue 31): final, tone and words, on both
backends, read back by the ledger and the projection; migration 0021 gives rows written
before it the words, tones and finality every surface showed for them then."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, MetaData, Table, select, text
from sqlalchemy.exc import IntegrityError

from kernel.timeutil import utc_now
from store.authority.store import Store
from store.claims.decisions import Claimed, Click
from store.execution.execution_ledger import ExecutionLedger
from store.execution.records import Observation
from store.lifecycle import Execution
from store.reads.projection import operation_view
from store.schema.migrate import current_revision, downgrade, upgrade
from store.vocabulary import Stage, Tone
from tests.support.backends import Backend
from tests.support.factories import dispatching, offered
from tests.support.migrations import columns_of, fresh_database

WARMING = {"en": "Warming up", "zh": "预热中"}
LIT = {"en": "Lit", "zh": "已点亮"}


async def claimed_and_sent(store: Store) -> str:
    op = await offered(store)
    claimed = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(claimed, Claimed)
    await dispatching(store, op.id)
    return op.id


async def raw_outcomes(store: Store, operation_id: str) -> list[dict[str, Any]]:
    async with store.engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT status, final, tone, words FROM outcomes"
                " WHERE operation_id = :id ORDER BY id"
            ),
            {"id": operation_id},
        )
        return [dict(row._mapping) for row in rows]


async def test_an_outcome_row_carries_its_finality_tone_and_words(store: Store) -> None:
    operation_id = await claimed_and_sent(store)
    ledger = ExecutionLedger(store)
    working = Observation(
        Stage.INITIAL,
        "warming",
        Execution.SUBMITTED,
        answers_attempt=True,
        concludes=False,
        words=WARMING,
        tone=Tone.WORKING,
        final=False,
    )
    recorded = await ledger.record_observation(operation_id, working)
    assert (recorded.final, recorded.tone, recorded.words) == (False, "working", WARMING)
    done = Observation(
        Stage.INITIAL, "lit", Execution.COMPLETED, words=LIT, tone=Tone.GOOD, final=True
    )
    await ledger.record_observation(operation_id, done)

    rows = await raw_outcomes(store, operation_id)
    assert [(r["status"], bool(r["final"]), r["tone"]) for r in rows] == [
        ("warming", False, "working"),
        ("lit", True, "good"),
    ]
    assert [json.loads(r["words"]) for r in rows] == [WARMING, LIT]

    outcomes = await ledger.outcomes(operation_id)
    assert [(o.final, o.tone, o.words) for o in outcomes] == [
        (False, "working", WARMING),
        (True, "good", LIT),
    ]
    op = await store.get(operation_id)
    assert op is not None
    view = operation_view(op, outcomes)
    assert view.outcome is not None
    newest = view.outcome.model_dump(mode="json")
    assert {k: newest[k] for k in ("status", "final", "tone", "words")} == {
        "status": "lit",
        "final": True,
        "tone": "good",
        "words": LIT,
    }
    assert view.outcomes[0].final is False


async def test_an_observation_without_its_meaning_reads_as_an_undeclared_status(
    store: Store,
) -> None:
    """The executor always stamps the meaning; a write without one still says something
    true: the status itself, warn, final (so nothing waits on it forever)."""
    operation_id = await claimed_and_sent(store)
    seen = Observation(Stage.INITIAL, "odd_status", Execution.COMPLETED, answers_attempt=True)
    outcome = await ExecutionLedger(store).record_observation(operation_id, seen)
    assert (outcome.final, outcome.tone, outcome.words) == (
        True,
        "warn",
        {"en": "odd status", "zh": "odd status"},
    )


async def test_a_tone_outside_the_vocabulary_is_refused_by_the_database(store: Store) -> None:
    operation_id = await claimed_and_sent(store)
    await ExecutionLedger(store).record_observation(
        operation_id, Observation(Stage.INITIAL, "lit", Execution.COMPLETED, words=LIT)
    )
    async with store.engine.begin() as conn:
        with pytest.raises(IntegrityError, match="ck_outcomes_tone"):
            await conn.exec_driver_sql("UPDATE outcomes SET tone = 'cheerful'")


# -- migration 0021 ---------------------------------------------------------------------------

T0 = utc_now()
# status -> (final, tone, en) after the upgrade: today's words for known statuses, the
# status itself (warn, final) for one nobody knew
BACKFILLED = {
    "resting": (False, "good", "Resting on the book"),
    "unknown": (False, "warn", "Submission unknown — reconciling"),
    "filled": (True, "good", "Filled"),
    "sent": (True, "good", "Sent"),
    "not_submitted": (True, "done", "Not executed — the venue never received it"),
    "unresolved": (True, "bad", "Unresolved — a person must check it"),
    "mystery": (True, "warn", "mystery"),
}


def _filler(column: Any) -> Any:
    """A value for a NOT NULL column of an older operations row (only its shape matters)."""
    python = column.type.python_type
    if python is datetime:
        return T0
    if python is bool:
        return False
    if python is int:
        return 1
    return "{}" if column.name in ("payload", "projection", "request_content") else "x"


def write_old_rows(sync: Connection) -> None:
    operations = Table("operations", MetaData(), autoload_with=sync)
    values = {
        column.name: _filler(column)
        for column in operations.columns
        if not column.nullable and column.server_default is None
    }
    values.update(id="op-older", state="outcome_observed")
    sync.execute(operations.insert().values(**values))
    outcomes = Table("outcomes", MetaData(), autoload_with=sync)
    for n, status in enumerate(BACKFILLED):
        sync.execute(
            outcomes.insert().values(
                operation_id="op-older",
                stage="initial",
                status=status,
                detail="{}",
                outcome_digest=f"{n:064d}",
                observed_at=T0,
            )
        )


def read_outcomes(sync: Connection) -> list[dict[str, Any]]:
    table = Table("outcomes", MetaData(), autoload_with=sync)
    return [dict(row) for row in sync.execute(select(table).order_by(table.c.id)).mappings()]


async def test_0021_backfills_older_outcomes_and_its_downgrade_drops_the_columns(
    backend: Backend, tmp_path: Path
) -> None:
    async with fresh_database(backend, tmp_path) as engine:
        await upgrade(engine, "0020")
        async with engine.begin() as conn:
            await conn.run_sync(write_old_rows)

        await upgrade(engine, "0021")

        async with engine.connect() as conn:
            rows = await conn.run_sync(read_outcomes)
        found = {
            r["status"]: (bool(r["final"]), r["tone"], json.loads(r["words"])["en"]) for r in rows
        }
        assert found == BACKFILLED
        zh = {r["status"]: json.loads(r["words"])["zh"] for r in rows}
        assert zh["resting"] == "挂单中" and zh["mystery"] == "mystery"
        async with engine.begin() as conn:
            with pytest.raises(IntegrityError):  # NOT NULL: a row always says what it means
                await conn.exec_driver_sql("UPDATE outcomes SET words = NULL")

        await downgrade(engine, "0020")
        assert await current_revision(engine) == "0020"
        columns = await columns_of(engine, "outcomes")
        assert not {"final", "tone", "words"} & set(columns)
        async with engine.connect() as conn:
            assert len(await conn.run_sync(read_outcomes)) == len(BACKFILLED)
