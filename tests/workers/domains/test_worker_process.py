"""`countersign worker` as a real process: it runs a claimed operation on its own and stops
cleanly on SIGTERM (no HTTP, no Lark ingress)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path

from store import (
    CallbackRoute,
    Claimed,
    Click,
    DeliveryLedger,
    Execution,
    ExecutionLedger,
    Observation,
    Source,
    Stage,
    Store,
)
from tests.support.backends import Backend
from tests.support.factories import dispatching, offered
from tests.support.processes import ENV, cli
from tests.support.worker_process import claimed, worker_config, worker_process
from workers.domains.execution import client_id_for
from workers.domains.finance.sim.venue import SimVenue

READY = "countersign worker running"


async def run_worker_until(
    config: Path, env: dict[str, str], done: Callable[[], Awaitable[bool]]
) -> list[str]:
    """Start `countersign worker`, wait for `done()`, SIGTERM it (exit 0); its output."""
    async with worker_process(config, env) as worker:
        await worker.until(done)
    return worker.output


async def test_the_worker_process_executes_a_claimed_order_and_stops_on_sigterm(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    operation_id = await claimed(store)
    config = worker_config(tmp_path / "worker.toml", backend, tmp_path / "venue.db")
    ledger = ExecutionLedger(store)

    async def filled() -> bool:
        return any(o.status == "filled" for o in await ledger.outcomes(operation_id))

    output = await run_worker_until(config, {"COUNTERSIGN_LOG_FORMAT": "json"}, filled)
    assert any(line.startswith(READY) for line in output), output
    records = [json.loads(line) for line in output if line.startswith("{")]
    about_it = [r for r in records if r.get("operation_id") == operation_id]
    assert any("outcome filled" in str(r["message"]) for r in about_it), records
    assert "worker-test-token-123456" not in "\n".join(output)
    async with await SimVenue.open(tmp_path / "venue.db", create=False) as venue:
        order = await venue.lookup(client_id_for(operation_id))
    assert order is not None and order.submit_count == 1


async def test_countersign_sim_faults_in_the_environment_reaches_the_venue(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    operation_id = await claimed(store)
    config = worker_config(tmp_path / "worker.toml", backend, tmp_path / "venue.db")
    ledger = ExecutionLedger(store)

    async def settled() -> bool:
        return bool(await ledger.outcomes(operation_id))

    output = await run_worker_until(config, {"COUNTERSIGN_SIM_FAULTS": "reject"}, settled)
    [outcome] = await ledger.outcomes(operation_id)
    assert outcome.status == "rejected" and "fault" in str(outcome.detail["reason"])
    assert any("faults on: reject" in line for line in output), output


async def test_countersign_reconcile_reports_what_it_queued(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    config = worker_config(tmp_path / "worker.toml", backend, tmp_path / "venue.db")
    env = {**ENV, "WORKER_TEST_TOKEN": "worker-test-token-123456"}
    nothing = await cli("reconcile", "--config", str(config), env=env)
    assert nothing.code == 0 and "nothing to reconcile" in nothing.out, nothing.err
    operation_id = await claimed(store)  # claimed, not executed yet: not the reconciler's
    one = await cli("reconcile", operation_id, "--config", str(config), env=env)
    assert one.code == 1 and "no unknown submission or working order" in one.err


async def test_countersign_deliveries_lists_failed_ones_and_replays_them(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    op = await offered(
        store,
        source=Source(
            "dev-agent", "with-hook", callback=CallbackRoute("https://a.example/h", "dev")
        ),
    )
    claim = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(claim, Claimed)
    ledger = ExecutionLedger(store)
    await dispatching(store, op.id)
    await ledger.record_observation(
        op.id,
        Observation(Stage.INITIAL, "filled", Execution.COMPLETED),
    )
    deliveries = DeliveryLedger(store)
    [pending] = await deliveries.find(operation_id=op.id)
    await deliveries.failed(pending.id, 500, "HTTP 500", retry_in_s=None)

    config = worker_config(tmp_path / "worker.toml", backend, tmp_path / "venue.db")
    env = {**ENV, "WORKER_TEST_TOKEN": "worker-test-token-123456"}
    listed = await cli("deliveries", "list", "--state", "failed", "--config", str(config), env=env)
    assert listed.code == 0 and pending.id in listed.out and "HTTP 500" in listed.out
    as_json = await cli("deliveries", "list", "--json", "--config", str(config), env=env)
    [row] = json.loads(as_json.out)
    assert (row["delivery_id"], row["state"], row["channel"]) == (pending.id, "failed", "webhook")
    replay = await cli("deliveries", "retry", pending.id, "--config", str(config), env=env)
    assert replay.code == 0 and "not executed again" in replay.out
    again = await cli("deliveries", "retry", pending.id, "--config", str(config), env=env)
    assert again.code == 1 and "only a failed delivery is replayed" in again.err
    replayed = await deliveries.get(pending.id)
    assert replayed is not None and replayed.state == "pending" and replayed.attempts == 0
