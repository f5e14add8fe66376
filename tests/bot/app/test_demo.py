"""`countersign demo --script` as a real process: every sample behaves, and it says so."""

from __future__ import annotations

from pathlib import Path

from bot.app.demo import story
from tests.support.processes import cli, free_port


async def test_the_scripted_demo_exits_0_after_every_sample(tmp_path: Path) -> None:
    result = await cli(
        "demo",
        "--script",
        "--data-dir",
        str(tmp_path / "demo"),
        "--port",
        str(free_port()),
        "--sandbox-port",
        str(free_port()),
    )
    assert result.code == 0, result.out + result.err
    samples = len(story(tmp_path).samples)  # every registered domain's, in the same order
    for line in (
        "[fills] card -> Filled · SIMULATED",
        "[rests then fills in parts] card -> Resting on the book · SIMULATED",
        "[rests then fills in parts] card -> Partially filled · SIMULATED",
        "[rests then fills in parts] card -> Filled · SIMULATED",
        "[preflight refuses] card -> Refused by pre-check — nothing sent · SIMULATED",
        "[message draft] card -> Sent",
        "[outside] messages the bot posted in oc_acme: 1",
        '[metrics] countersign_decisions_total{"action": "confirm", "entry": "lark"} '
        f"moved by {samples} (expected {samples})",
    ):
        assert line in result.out, (line, result.out)
    assert "FAILED" not in result.out
