"""The proposer's CLI against a real `countersign run --dev` (Lark off, so nothing is decided):
`--version`, a request_id made for a file without one, a second cancel, a wait that runs out.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from importlib import metadata
from pathlib import Path

import pytest

from tests.support.processes import ENV, ROOT, Running, cli, free_port, start, stop

ORDER = json.loads((ROOT / "examples" / "order.json").read_text())


@pytest.fixture
async def dev_bot(tmp_path: Path) -> AsyncIterator[Running]:
    running = await start("--dev", "--data-dir", str(tmp_path / "dev"), "--port", str(free_port()))
    yield running
    assert await stop(running) == 0


def client(bot: Running) -> tuple[str, ...]:
    return ("--url", bot.url, "--token", "dev-token")


async def test_version_is_the_installed_distributions() -> None:
    result = await cli("--version")
    assert result.code == 0
    assert result.out == f"countersign {metadata.version('countersign')}\n"


async def test_a_file_without_a_request_id_gets_one_from_its_content_and_a_retry_reuses_it(
    dev_bot: Running, tmp_path: Path
) -> None:
    without = {key: value for key, value in ORDER.items() if key != "request_id"}
    path = tmp_path / "order.json"
    path.write_text(json.dumps(without, indent=2))

    first = await cli("propose", str(path), *client(dev_bot), "--json")
    assert first.code == 0, first.err
    view = json.loads(first.out)  # stdout stays the operation's JSON; the id is on stderr
    made = view["source"]["request_id"]
    assert made.startswith("cli-") and f"request_id {made}" in first.err
    assert "reuses it" in first.err

    retry = await cli("propose", str(path), *client(dev_bot))
    assert retry.code == 0 and retry.out.startswith("already proposed (same request_id):")
    assert view["id"] in retry.out and f"request_id {made}" in retry.err
    # the same content from stdin is the same request
    piped = await cli("propose", "-", *client(dev_bot), "--json", stdin=path.read_bytes())
    assert json.loads(piped.out)["id"] == view["id"]

    other = await cli(
        "propose", "-", *client(dev_bot), "--json", stdin=json.dumps(without).encode()
    )
    assert other.code == 0, other.err
    assert json.loads(other.out)["source"]["request_id"] not in (made, None)

    given = await cli("propose", "examples/order.json", *client(dev_bot), "--json")
    assert json.loads(given.out)["source"]["request_id"] == ORDER["request_id"]
    assert "request_id" not in given.err  # a file's own id is never replaced

    # what is not an object is sent as it is, for the API to say what is wrong
    bad = await cli("propose", "-", *client(dev_bot), stdin=b'["not", "an", "object"]')
    assert bad.code == 1 and bad.err.startswith("error: ")


async def test_cancelling_an_operation_already_cancelled_says_so_and_exits_0(
    dev_bot: Running,
) -> None:
    proposed = await cli("propose", "examples/order.json", *client(dev_bot), "--json")
    operation_id = json.loads(proposed.out)["id"]
    first = await cli("cancel", operation_id, *client(dev_bot))
    assert first.code == 0 and first.out.startswith("cancelled:\n"), first.err

    again = await cli("cancel", operation_id, *client(dev_bot))
    assert again.code == 0, again.err
    assert again.out.startswith("already cancelled (nothing changed):\n")
    assert f"{operation_id}  Cancelled by the proposer" in again.out
    as_json = await cli("cancel", operation_id, *client(dev_bot), "--json")
    assert as_json.code == 0 and json.loads(as_json.out)["state"] == "cancelled"
    assert as_json.err == "already cancelled (nothing changed)\n"

    missing = await cli("cancel", "01NOPE", *client(dev_bot))
    assert missing.code == 1 and "not_found" in missing.err


async def test_a_wait_that_runs_out_shows_the_operation_and_exits_3(dev_bot: Running) -> None:
    proposed = await cli("propose", "examples/order.json", *client(dev_bot), "--json")
    operation_id = json.loads(proposed.out)["id"]  # Lark is off: nobody can decide it

    for until in ((), ("--until", "decided")):
        waited = await cli("show", operation_id, "--wait", "1", *until, *client(dev_bot))
        assert waited.code == 3, waited.err
        assert waited.out.startswith(f"{operation_id}  Card not posted: Lark is off here")
        said = "decided" if until else "final"
        assert waited.err == f"not {said} after 1 s: the operation is posting card\n"

    alone = await cli("show", operation_id, "--until", "decided", *client(dev_bot))
    assert alone.code == 2 and "--until needs --wait N" in alone.err
    too_long = await cli("show", operation_id, "--wait", "86401", *client(dev_bot))
    assert too_long.code == 2 and "0..86400" in too_long.err


async def test_the_list_has_age_and_outcome_columns(dev_bot: Running) -> None:
    env = {**ENV, "TZ": "UTC"}
    await cli("propose", "examples/order.json", *client(dev_bot), env=env)
    listed = await cli("list", *client(dev_bot), env=env)
    assert listed.code == 0, listed.err
    header, row = listed.out.splitlines()
    assert header.split() == ["ID", "AGE", "STATE", "OUTCOME", "KIND", "WHAT"]
    assert " ago  posting card  " in row and row.endswith("BUY 0.010 BTC-PERP  SIMULATED")
    assert row[header.index("OUTCOME")] == "—"  # nothing ran yet
