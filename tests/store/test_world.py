"""Which world an operation acts in (design principle 8): stored with it, checked by the
database, shown by the projection, and bound into the confirm digest, so the same terms in
another world are another card; migration 0022 gives older rows the world they acted in."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, MetaData, Table, select
from sqlalchemy.exc import IntegrityError

from kernel.reasons import Reason
from kernel.timeutil import utc_now
from store.authority.envelope import Envelope, confirm_digest
from store.authority.proposals import LOCAL_WORLDS, Draft
from store.authority.store import Store
from store.claims.decisions import Click, Refused
from store.reads.projection import operation_view
from store.schema.migrate import current_revision, downgrade, upgrade
from store.vocabulary import World
from tests.support.backends import Backend
from tests.support.factories import draft, offered
from tests.support.migrations import columns_of, fresh_database

# each world with the `simulated` it implies (nothing of it leaves this machine)
WORLDS = [
    (World.SIMULATED, True),
    (World.EMULATOR, True),
    (World.TESTNET, False),
    (World.LIVE, False),
]


@pytest.mark.parametrize(("world", "simulated"), WORLDS, ids=lambda v: str(v))
async def test_an_operation_keeps_its_world_and_its_digest_stays_recomputable(
    store: Store, world: World, simulated: bool
) -> None:
    op = await offered(store, world=world, simulated=simulated)
    assert op.envelope.world is world and op.envelope.simulated is simulated
    assert op.confirm_digest == confirm_digest(op.envelope)
    view = operation_view(op)
    assert (view.world, view.simulated) == (world.value, simulated)


async def test_a_draft_without_a_world_gets_the_one_its_simulated_flag_implies(
    store: Store,
) -> None:
    simulated = await offered(store)
    not_a_venue = await offered(store, simulated=False)
    assert simulated.envelope.world is World.SIMULATED
    assert not_a_venue.envelope.world is None
    assert operation_view(not_a_venue).world is None


@pytest.mark.parametrize(
    ("world", "simulated"),
    [(World.EMULATOR, False), (World.TESTNET, True), (World.LIVE, True), (World.SIMULATED, False)],
    ids=lambda v: str(v),
)
def test_a_draft_whose_simulated_flag_contradicts_its_world_is_refused(
    world: World, simulated: bool
) -> None:
    with pytest.raises(ValueError, match=f"world {world.value} has simulated={simulated}"):
        draft(world=world, simulated=simulated)


@pytest.mark.parametrize(
    ("filed", "other"),
    [
        ((World.SIMULATED, True), (World.EMULATOR, True)),
        ((World.EMULATOR, True), (World.SIMULATED, True)),
        ((World.TESTNET, False), (World.LIVE, False)),
        ((World.LIVE, False), (World.TESTNET, False)),
        ((World.TESTNET, False), (None, False)),
    ],
    ids=lambda pair: str(pair[0]),
)
async def test_only_the_world_differs_and_the_digest_does_too(
    store: Store, filed: tuple[World, bool], other: tuple[World | None, bool]
) -> None:
    """Same terms, same `simulated`, another world: another digest, and a click carrying it
    claims nothing."""
    op = await offered(store, world=filed[0], simulated=filed[1])
    altered = dataclasses.replace(op.envelope, world=other[0], simulated=other[1])
    assert dataclasses.replace(altered, world=op.envelope.world) == op.envelope
    altered_digest = confirm_digest(altered)
    assert altered_digest != op.confirm_digest

    result = await store.confirm_and_claim(
        Click(op.id, "confirm", altered_digest, "ou_alice", "oc_ops", op.card_message_id)
    )

    assert isinstance(result, Refused) and result.reason is Reason.DIGEST_MISMATCH
    assert await store.get(op.id) == op
    assert await store.claim_count(op.id) == 0


def test_every_pair_of_world_and_simulated_gives_its_own_digest() -> None:
    """Leaving the implied world out of the digest (older digests stay what they were) loses
    nothing: with `simulated` bound too, no two of these share a digest."""
    base = draft()
    digests = set()
    for world in [None, *World]:
        for simulated in (False, True):
            if simulated != (world in LOCAL_WORLDS):  # no draft files such a pair
                continue
            envelope_digest = confirm_digest(_envelope_of(base, world=world, simulated=simulated))
            digests.add(envelope_digest)
    assert len(digests) == 1 + len(World)


def _envelope_of(base: Draft, *, world: World | None, simulated: bool) -> Envelope:
    return Envelope(
        id="01AAAAAAAAAAAAAAAAAAAAAAAA",
        kind=base.kind,
        schema_version=1,
        executor_name=base.executor_name,
        executor_revision=base.executor_revision,
        simulated=simulated,
        payload="{}",
        projection="{}",
        audience=base.audience,
        target_ref=base.target_ref,
        expires_at=NOW,
        source=base.source,
        world=world,
    )


async def test_a_world_outside_the_vocabulary_is_refused_by_the_database(store: Store) -> None:
    await offered(store)
    async with store.engine.begin() as conn:
        with pytest.raises(IntegrityError, match="ck_operations_world"):
            await conn.exec_driver_sql("UPDATE operations SET world = 'mainnet'")


# -- migration 0022 ---------------------------------------------------------------------------

NOW = utc_now()


def _filler(column: Any) -> Any:
    """A value for a NOT NULL column of an older operations row (only its shape matters)."""
    python = column.type.python_type
    if python is datetime:
        return NOW
    if python is bool:
        return False
    if python is int:
        return 1
    return "{}" if column.name in ("payload", "projection", "request_content") else "x"


def write_older_rows(sync: Connection) -> None:
    operations = Table("operations", MetaData(), autoload_with=sync)
    filled = {
        column.name: _filler(column)
        for column in operations.columns
        if not column.nullable and column.server_default is None
    }
    for operation_id, simulated in (("op-simulated", True), ("op-message", False)):
        sync.execute(
            operations.insert().values(
                {
                    **filled,
                    "id": operation_id,
                    "simulated": simulated,
                    "source_request_id": operation_id,
                    "state": "claimed",
                }
            )
        )
    attempts = Table("attempts", MetaData(), autoload_with=sync)
    sync.execute(
        attempts.insert().values(
            id="at-1", operation_id="op-simulated", client_id="cs-op-simulated", recorded_at=NOW
        )
    )


def worlds_of(sync: Connection) -> dict[str, Any]:
    operations = Table("operations", MetaData(), autoload_with=sync)
    rows = sync.execute(select(operations.c.id, operations.c.world)).all()
    return {row.id: row.world for row in rows}


async def test_0022_gives_older_rows_their_world_and_its_downgrade_drops_the_columns(
    backend: Backend, tmp_path: Path
) -> None:
    async with fresh_database(backend, tmp_path) as engine:
        await upgrade(engine, "0021")
        async with engine.begin() as conn:
            await conn.run_sync(write_older_rows)

        await upgrade(engine, "0022")

        async with engine.connect() as conn:
            assert await conn.run_sync(worlds_of) == {
                "op-simulated": "simulated",
                "op-message": None,
            }
        assert "evidence" in await columns_of(engine, "attempts")
        async with engine.begin() as conn:
            with pytest.raises(IntegrityError):  # checked from the vocabulary
                await conn.exec_driver_sql("UPDATE operations SET world = 'mainnet'")
        async with engine.begin() as conn:
            await conn.exec_driver_sql(
                "UPDATE attempts SET evidence = '{\"nonce\":1}' WHERE client_id = 'cs-op-simulated'"
            )

        await downgrade(engine, "0021")
        assert await current_revision(engine) == "0021"
        assert "world" not in await columns_of(engine, "operations")
        assert "evidence" not in await columns_of(engine, "attempts")
        async with engine.connect() as conn:
            operations = await columns_of(engine, "operations")
            assert "simulated" in operations
            count = (await conn.exec_driver_sql("SELECT count(*) FROM attempts")).scalar_one()
        assert count == 1

        await upgrade(engine, "0022")  # and up again, from what the downgrade left
        async with engine.connect() as conn:
            assert (await conn.run_sync(worlds_of))["op-simulated"] == "simulated"
