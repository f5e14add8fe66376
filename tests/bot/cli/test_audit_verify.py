"""`countersign audit verify --store`, the real process on the test backend: the chain holds,
then a raw-SQL edit of one entry is named and the exit code says the chain is broken; a
policy version's document edited, or swapped for another's, is named too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import text

from bot.app.policy_record import record_policy
from bot.config import parse
from kernel.canonical import canonical_json
from store import Click, Store
from tests.support.api import settings_data
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
    assert holds.out.strip() == (
        f"audit chain holds: {linked} entries, head at entry {linked}, 0 policy versions"
    )

    await offered(store)  # newer entries the chainer has not linked yet: said, not a break
    waiting = await cli("audit", "verify", "--store", "--config", config, env=ENV)
    assert waiting.code == 0 and "newer entries not linked yet" in waiting.out, waiting.out

    async with store.engine.begin() as conn:
        await conn.execute(text("UPDATE audit SET actor = 'ou_mallory' WHERE chain_seq = 2"))
    broken = await cli("audit", "verify", "--store", "--config", config, env=ENV)
    assert broken.code == 1, broken.out
    assert broken.out.startswith("audit chain broken: entry 2 was edited"), broken.out


async def test_verify_names_a_policy_document_edited_or_swapped(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    first = await record_policy(store, parse(settings_data()), "config:a")
    data = settings_data()
    data["audiences"][0]["required_confirmations"] = 2
    second = await record_policy(store, parse(data), "config:a")
    assert first is not None and second is not None
    await link_all(store)
    config = str(backend_config(backend, tmp_path, free_port()))
    verify = ("audit", "verify", "--store", "--config", config)

    holds = await cli(*verify, env=ENV)
    assert holds.code == 0 and holds.out.strip().endswith("2 policy versions"), holds.out

    # the document edited in place: its digest no longer fits
    async with store.engine.begin() as conn:
        await conn.execute(
            text("UPDATE policy_versions SET document = replace(document, '2', '1') WHERE seq = 2")
        )
    edited = await cli(*verify, env=ENV)
    assert edited.code == 1, edited.out
    assert edited.out.startswith("audit chain broken: policy version 2's document was edited")

    # and rewritten with its digest: the chain's entry still names the digest it was
    async with store.engine.begin() as conn:
        await conn.execute(
            text("UPDATE policy_versions SET document = :doc, digest = :digest WHERE seq = 2"),
            {"doc": first_document(first), "digest": first.digest},
        )
    swapped = await cli(*verify, env=ENV)
    assert swapped.code == 1, swapped.out
    assert "policy version 2 is not the one its audit entry names" in swapped.out


def first_document(version: Any) -> str:
    return canonical_json(version.document)
