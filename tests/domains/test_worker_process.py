"""`countersign worker` as a real process: it runs a claimed operation on its own and stops
cleanly on SIGTERM (no HTTP, no Lark ingress)."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from store.authority import Claimed, Click, Store
from store.execution import ExecutionLedger
from tests.conftest import Backend
from tests.factories import offered
from tests.test_cli import ENV, ROOT
from workers.domains.execution import client_id_for
from workers.domains.finance.venue import SimVenue

READY = "countersign worker running"


def worker_config(path: Path, backend: Backend, venue: Path) -> Path:
    schema = f'schema = "{backend.schema}"\n' if backend.schema else ""
    path.write_text(
        f"""
[store]
url = "{backend.url}"
{schema}
[lark]
mode = "off"

[[audiences]]
name = "ops"
chat_id = "oc_ops"
operators = ["ou_alice", "ou_bob"]

[[proposers]]
name = "dev-agent"
token_env = "WORKER_TEST_TOKEN"

[domains.finance]
venue_path = "{venue}"
accounts = [{{ name = "sim-main", venue = "sim", budget = "100000" }}]

[execution]
poll_s = 0.2
venue_tick_s = 0.2
"""
    )
    return path


async def test_the_worker_process_executes_a_claimed_order_and_stops_on_sigterm(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    op = await offered(store)
    claim = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(claim, Claimed)
    config = worker_config(tmp_path / "worker.toml", backend, tmp_path / "venue.db")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "worker",
        "--config",
        str(config),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=ROOT,
        env={**ENV, "WORKER_TEST_TOKEN": "worker-test-token-123456"},
    )
    assert process.stdout is not None
    output: list[str] = []

    async def read() -> None:
        assert process.stdout is not None
        async for raw in process.stdout:
            output.append(raw.decode(errors="replace").rstrip())

    reader = asyncio.create_task(read())
    ledger = ExecutionLedger(store)
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while not [o for o in await ledger.outcomes(op.id) if o.status == "filled"]:
            assert process.returncode is None, "\n".join(output)
            assert loop.time() < deadline, "\n".join(output[-30:])
            await asyncio.sleep(0.1)
        assert any(line.startswith(READY) for line in output), output
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 20) == 0, "\n".join(output[-30:])
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await reader
    async with await SimVenue.open(tmp_path / "venue.db", create=False) as venue:
        order = await venue.lookup(client_id_for(op.id))
    assert order is not None and order.submit_count == 1
