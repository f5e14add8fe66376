"""`countersign demo --script` as a real process: every sample behaves, and it says so."""

from __future__ import annotations

from pathlib import Path

from bot.app.demo_story import story
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
    samples = story(tmp_path).samples  # every registered domain's, in the same order
    confirms = sum(d.action == "confirm" for s in samples for d in s.decisions)
    for line in (
        "[fills] card -> Filled · SIMULATED",
        "[rests then fills in parts] card -> Resting on the book · SIMULATED",
        "[rests then fills in parts] card -> Partially filled · SIMULATED",
        "[rests then fills in parts] card -> Filled · SIMULATED",
        "[preflight refuses] card -> Refused by pre-check — nothing sent · SIMULATED",
        "[message draft] card -> Sent",
        "[two of three] Alice clicks Confirm -> toast success",
        "[two of three] Carol clicks Confirm -> toast success",
        "[two of three] card -> Filled · SIMULATED",
        "[rejected with a reason] Alice clicks Reject saying 'Price is above the mark: "
        "propose again at 60,000' -> toast success",
        "[rejected with a reason] card -> Reason: Price is above the mark: propose again at 60,000",
        "[outside] messages the bot posted in oc_acme: 1",
        '[metrics] countersign_decisions_total{"action": "confirm", "entry": "lark"} '
        f"moved by {confirms} (expected {confirms})",
        '[metrics] countersign_decisions_total{"action": "reject", "entry": "lark"} '
        "moved by 1 (expected 1)",
    ):
        assert line in result.out, (line, result.out)
    assert "FAILED" not in result.out
    checks = (
        sum(len(s.expect) for s in story(tmp_path).samples)
        + 1
        + len([line for line in result.out.splitlines() if line.startswith("[metrics] ")])
    )
    # the last line says how it went; nothing on the happy path is worth a warning
    assert result.out.splitlines()[-1] == f"PASS: {checks} of {checks} checks behaved"
    assert [line for line in result.err.splitlines() if " WARNING " in line] == [], result.err
