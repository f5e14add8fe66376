"""An attempt's evidence (a signed request and its nonce) is one durable write, made before
the request leaves and written once: the same again changes nothing, other evidence for the
same client id is refused, and any replica reads back what was recorded; on both backends."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest

from kernel.canonical import FloatRefused
from store.authority.store import Store
from store.claims.decisions import Claimed, Click
from store.execution.evidence import (
    MAX_EVIDENCE_CHARS,
    EvidenceConflict,
    EvidenceRefused,
    NoSuchAttempt,
)
from store.execution.execution_ledger import ExecutionLedger
from tests.support.factories import dispatching, offered, writes

SIGNED: dict[str, Any] = {
    "action": {"type": "order", "orders": [{"a": 0, "b": True, "p": "60000", "s": "0.01"}]},
    "nonce": 1765000000123,
    "expiresAfter": 1765000060123,
    "signature": {"r": "0x" + "1" * 64, "s": "0x" + "2" * 64, "v": 27},
}


async def an_attempt(store: Store) -> str:
    op = await offered(store)
    claimed = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(claimed, Claimed)
    attempt = await dispatching(store, op.id)
    return attempt.client_id


async def raw_evidence(store: Store, client_id: str) -> Any:
    async with store.engine.connect() as conn:
        found = await conn.exec_driver_sql(
            "SELECT evidence FROM attempts WHERE client_id = ?"
            if store.sqlite
            else "SELECT evidence FROM attempts WHERE client_id = $1",
            (client_id,),
        )
        return found.scalar_one()


async def test_evidence_is_recorded_once_as_canonical_json_and_read_back(store: Store) -> None:
    client_id = await an_attempt(store)
    ledger = ExecutionLedger(store)
    assert await ledger.evidence(client_id) is None

    before = writes(store)
    await ledger.record_evidence(client_id, SIGNED)
    assert writes(store) - before == 1, "one durable write"

    assert await ledger.evidence(client_id) == SIGNED
    stored = await raw_evidence(store, client_id)
    assert stored.startswith('{"action":') and " " not in stored  # canonical: sorted, compact


async def test_the_same_evidence_again_changes_nothing(store: Store) -> None:
    client_id = await an_attempt(store)
    ledger = ExecutionLedger(store)
    await ledger.record_evidence(client_id, SIGNED)
    stored = await raw_evidence(store, client_id)

    # the same evidence, its keys in another order: the same canonical text
    await ledger.record_evidence(client_id, dict(reversed(list(SIGNED.items()))))

    assert await raw_evidence(store, client_id) == stored


async def test_other_evidence_for_the_same_client_id_is_refused_and_the_first_kept(
    store: Store,
) -> None:
    client_id = await an_attempt(store)
    ledger = ExecutionLedger(store)
    await ledger.record_evidence(client_id, SIGNED)

    with pytest.raises(EvidenceConflict, match="written once") as refused:
        await ledger.record_evidence(client_id, {**SIGNED, "nonce": SIGNED["nonce"] + 1})

    assert refused.value.client_id == client_id
    assert await ledger.evidence(client_id) == SIGNED


async def test_evidence_for_no_recorded_attempt_is_refused_and_nothing_written(
    store: Store,
) -> None:
    ledger = ExecutionLedger(store)
    with pytest.raises(NoSuchAttempt, match="begin_dispatch"):
        await ledger.record_evidence("cs-nobody", SIGNED)
    assert await ledger.evidence("cs-nobody") is None


@pytest.mark.parametrize(
    ("evidence", "error", "says"),
    [
        ({"price": 60000.5}, FloatRefused, "decimal strings"),
        (["not", "an", "object"], EvidenceRefused, "JSON object"),
        ({"blob": "x" * MAX_EVIDENCE_CHARS}, EvidenceRefused, "the cap is"),
    ],
    ids=["float", "not-an-object", "too-long"],
)
async def test_evidence_that_cannot_be_exact_is_refused_before_anything_is_written(
    store: Store, evidence: Any, error: type[Exception], says: str
) -> None:
    client_id = await an_attempt(store)
    ledger = ExecutionLedger(store)
    with pytest.raises(error, match=says):
        await ledger.record_evidence(client_id, evidence)
    assert await ledger.evidence(client_id) is None


async def test_decimals_are_kept_exactly(store: Store) -> None:
    client_id = await an_attempt(store)
    ledger = ExecutionLedger(store)
    await ledger.record_evidence(client_id, {"px": Decimal("60000.50"), "sz": Decimal("0.010")})
    assert await ledger.evidence(client_id) == {"px": "60000.50", "sz": "0.010"}


async def test_racing_writers_of_different_evidence_one_wins_and_the_rest_are_refused(
    store: Store,
) -> None:
    """Two replicas' passes race to record evidence for one attempt: the database decides,
    exactly one lands and every other is refused; what is read back is the winner's."""
    client_id = await an_attempt(store)
    ledger = ExecutionLedger(store)
    candidates = [{**SIGNED, "nonce": SIGNED["nonce"] + n} for n in range(8)]

    results = await asyncio.gather(
        *(ledger.record_evidence(client_id, each) for each in candidates),
        return_exceptions=True,
    )

    landed = [candidates[n] for n, result in enumerate(results) if result is None]
    refused = [result for result in results if isinstance(result, EvidenceConflict)]
    assert (len(landed), len(refused)) == (1, len(candidates) - 1), results
    assert await ledger.evidence(client_id) == landed[0]
