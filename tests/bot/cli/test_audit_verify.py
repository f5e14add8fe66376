"""`countersign audit verify --store`, the real process on the test backend: the chain holds,
then a raw-SQL edit of one entry is named and the exit code says the chain is broken."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from store import Click, Store
from tests.support.audit import link_all
from tests.support.backends import Backend
from tests.support.factories import offered
from tests.support.processes import ENV, backend_config, cli, free_port


async def test_verify_says_the_chain_holds_then_names_the_edited_entry(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    for _ in range(2):
        op = await offered(store)
        await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    linked = await link_all(store)
    config = str(backend_config(backend, tmp_path, free_port()))

    holds = await cli("audit", "verify", "--store", "--config", config, env=ENV)
    assert holds.code == 0, holds.err
    assert holds.out.strip() == f"audit chain holds: {linked} entries, head at entry {linked}"

    await offered(store)  # newer entries the chainer has not linked yet: said, not a break
    waiting = await cli("audit", "verify", "--store", "--config", config, env=ENV)
    assert waiting.code == 0 and "newer entries not linked yet" in waiting.out, waiting.out

    async with store.engine.begin() as conn:
        await conn.execute(text("UPDATE audit SET actor = 'ou_mallory' WHERE chain_seq = 2"))
    broken = await cli("audit", "verify", "--store", "--config", config, env=ENV)
    assert broken.code == 1, broken.out
    assert broken.out.startswith("audit chain broken: entry 2 was edited"), broken.out
