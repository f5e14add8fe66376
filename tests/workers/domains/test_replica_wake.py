"""Two replicas on one PostgreSQL database: a claim written through replica A (this test's
store, as A's callback consumer writes it) is executed by replica B, a `countersign worker`
process whose executor polls once an hour, so only A's notification can have woken it.
B is seen asleep (its executor's debug line) and listening before the claim is written.

On SQLite there is no other process to notify: the worker process opens no listener."""

from __future__ import annotations

from pathlib import Path

from store import ExecutionLedger, Store
from tests.support.backends import Backend
from tests.support.worker_process import claimed, worker_config, worker_process
from workers.domains.execution import client_id_for
from workers.domains.finance.sim.venue import SimVenue

AN_HOUR = 3600
DEBUG_JSON = {"COUNTERSIGN_LOG_FORMAT": "json", "COUNTERSIGN_LOG_LEVEL": "debug"}


async def test_a_claim_through_one_replica_wakes_the_executor_of_another(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    venue = tmp_path / "venue.db"
    config = worker_config(tmp_path / "b.toml", backend, venue, poll_s=AN_HOUR)
    async with worker_process(config, DEBUG_JSON) as b:

        async def asleep() -> bool:  # found nothing due; sleeps an hour unless woken
            return b.said("countersign.executor", "idle")

        async def listening() -> bool:
            return b.said("countersign.events", "listening")

        await b.until(asleep)
        if backend.name != "postgresql":
            assert not any(r["logger"] == "countersign.events" for r in b.records)
            return
        await b.until(listening)
        operation_id = await claimed(store)  # replica A writes the claim
        ledger = ExecutionLedger(store)

        async def filled() -> bool:
            return any(o.status == "filled" for o in await ledger.outcomes(operation_id))

        await b.until(filled)
        assert b.said("countersign.executor", "outcome filled", operation_id)
    async with await SimVenue.open(venue, create=False) as sim:
        order = await sim.lookup(client_id_for(operation_id))
    assert order is not None and order.submit_count == 1
