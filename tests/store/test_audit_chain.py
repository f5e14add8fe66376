"""The audit log as one hash chain per store (store/audit/chain.py), on SQLite and PostgreSQL:
decisions from two stores at once (two processes' worth of writers) end in one gap-free
chain, and a raw-SQL edit, removal or move of any entry is named by the check."""

from __future__ import annotations

import asyncio

from sqlalchemy import func, select, text, update

from store import AuditChain, Claimed, Click, Refused, Store
from store.schema.tables import AuditRow
from tests.support.audit import link_all
from tests.support.backends import Backend
from tests.support.factories import offered


async def decide_many(store: Store, count: int) -> None:
    """Offer `count` operations and decide each: a claim, a refusal, a reject in turn."""
    for index in range(count):
        op = await offered(store)
        if index % 3 == 0:
            done = await store.confirm_and_claim(
                Click(op.id, "confirm", op.confirm_digest, "ou_alice")
            )
            assert isinstance(done, Claimed)
        elif index % 3 == 1:
            refused = await store.confirm_and_claim(Click(op.id, "confirm", "0" * 64, "ou_alice"))
            assert isinstance(refused, Refused)
        else:
            await store.reject(Click(op.id, "reject", op.confirm_digest, "ou_bob"))


async def entries(store: Store) -> int:
    async with store.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(AuditRow))).scalar_one())


async def linked_seqs(store: Store) -> list[int]:
    async with store.read() as conn:
        found = await conn.execute(
            select(AuditRow.chain_seq)
            .where(AuditRow.chain_seq.is_not(None))
            .order_by(AuditRow.chain_seq)
        )
        return [int(seq) for seq in found.scalars()]


async def test_two_stores_deciding_and_linking_at_once_leave_one_gap_free_chain(
    store: Store, replica: Store
) -> None:
    chains = (AuditChain(store), AuditChain(replica))
    deciding = asyncio.gather(decide_many(store, 12), decide_many(replica, 12))
    while not deciding.done():  # both chainers link while both stores write
        await asyncio.gather(*(chain.link() for chain in chains))
        await asyncio.sleep(0)
    await deciding
    await link_all(store)
    total = await entries(store)
    assert total >= 24 * 3  # proposed, card sent and a decision at least, each
    assert await linked_seqs(store) == list(range(1, total + 1))
    for chain in chains:
        check = await chain.verify()
        assert check.holds, check.problem
        assert check.entries == total and check.head_seq == total


async def tampered(store: Store, statement: str) -> str | None:
    await link_all(store)
    async with store.engine.begin() as conn:
        await conn.execute(text(statement))
    return (await AuditChain(store).verify()).problem


async def test_an_edited_entry_is_named(store: Store) -> None:
    await decide_many(store, 3)
    problem = await tampered(store, "UPDATE audit SET actor = 'ou_mallory' WHERE chain_seq = 4")
    assert problem is not None and problem.startswith("entry 4 was edited")


async def test_a_removed_entry_is_named(store: Store) -> None:
    await decide_many(store, 3)
    problem = await tampered(store, "DELETE FROM audit WHERE chain_seq = 5")
    assert problem == "entry 5 is missing (removed)"


async def test_removed_last_entries_are_named_by_the_head(store: Store) -> None:
    await decide_many(store, 3)
    await link_all(store)
    linked = await linked_seqs(store)
    problem = await tampered(store, f"DELETE FROM audit WHERE chain_seq = {linked[-1]}")
    assert problem is not None and "removed" in problem and f"head says {linked[-1]}" in problem


async def test_moved_entries_are_named(store: Store) -> None:
    await decide_many(store, 3)
    await link_all(store)
    async with store.engine.begin() as conn:  # entries 2 and 3 trade places
        await conn.execute(update(AuditRow).where(AuditRow.chain_seq == 2).values(chain_seq=-2))
        await conn.execute(update(AuditRow).where(AuditRow.chain_seq == 3).values(chain_seq=2))
        await conn.execute(update(AuditRow).where(AuditRow.chain_seq == -2).values(chain_seq=3))
    problem = (await AuditChain(store).verify()).problem
    assert problem == "entry 2 does not follow entry 1 (moved or replaced)"


async def test_an_untouched_chain_holds_and_linking_again_links_nothing(store: Store) -> None:
    await decide_many(store, 3)
    first = await link_all(store)
    assert first == await entries(store)
    assert await AuditChain(store).link() == 0
    assert (await AuditChain(store).verify()).holds


async def test_nothing_is_linked_past_a_transaction_still_running(
    store: Store, backend: Backend
) -> None:
    await decide_many(store, 1)
    await link_all(store)
    before = len(await linked_seqs(store))
    now = "now()" if backend.name == "postgresql" else "CURRENT_TIMESTAMP"
    early = (
        "INSERT INTO audit (operation_id, at, actor, event) "
        f"VALUES ('early', {now}, 'system:test', 'held')"
    )
    if backend.name == "postgresql":
        held = await store.engine.connect()
        transaction = await held.begin()
        try:  # an entry written by a transaction that has not committed yet...
            await held.execute(text(early))
            await decide_many(store, 1)  # ...and entries committed after it
            await AuditChain(store).link()
            assert len(await linked_seqs(store)) == before  # none may go before it
            await transaction.commit()
        finally:
            await held.close()
    else:  # one writer at a time: an entry is committed before any later one is written
        async with store.engine.begin() as conn:
            await conn.execute(text(early))
        await decide_many(store, 1)
    await link_all(store)
    async with store.read() as conn:
        found = await conn.execute(
            select(AuditRow.event).where(AuditRow.chain_seq > before).order_by(AuditRow.chain_seq)
        )
        order = found.scalars().all()
    assert order[0] == "held" and len(order) > 1  # its transaction began first: it is first
    assert (await AuditChain(store).verify()).holds
