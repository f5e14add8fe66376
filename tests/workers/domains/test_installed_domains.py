"""A team's own domain needs no edit of countersign: a distribution with an entry point in
the `countersign.domains` group is registered in every process that imports the registry (a
fresh `countersign` process here; the worker process imports the same registry). One that
cannot load stops the process with its name, rather than running without it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

import pytest

from tests.support.processes import ENV, ROOT, cli
from tests.support.toy_domain import KIND
from workers.domains import ENTRY_POINTS, register

# `countersign config check` and the rest read no config here: each domain runs on defaults
pytestmark = pytest.mark.usefixtures("outside_the_checkout")


@pytest.fixture
def outside_the_checkout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)


def installed(site: Path, target: str) -> dict[str, str]:
    """A distribution installed under `site` whose `countersign.domains` entry point is
    `target`; the environment a process finds it in."""
    info = site / "acme_lamps-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-lamps\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINTS}]\nlamps = {target}\n")
    paths = [str(site), str(ROOT), ENV.get("PYTHONPATH", "")]
    return {**ENV, "PYTHONPATH": os.pathsep.join(path for path in paths if path)}


async def test_an_installed_domain_is_listed_by_a_fresh_process(tmp_path: Path) -> None:
    env = installed(tmp_path / "site", "tests.support.toy_domain:ToyDomain")
    listed = await cli("kinds", env=env, cwd=tmp_path)
    assert listed.code == 0, listed.err
    assert KIND in [line.split()[0] for line in listed.out.splitlines()]
    without = await cli("kinds", cwd=tmp_path)
    assert KIND not in [line.split()[0] for line in without.out.splitlines()]


async def test_an_entry_point_that_cannot_load_stops_the_process_naming_it(
    tmp_path: Path,
) -> None:
    env = installed(tmp_path / "site", "acme_lamps_missing:LampDomain")
    listed = await cli("kinds", env=env, cwd=tmp_path)
    assert listed.code != 0
    assert "domain entry point lamps = acme_lamps_missing:LampDomain" in listed.err


def test_a_domain_may_not_redefine_the_executors_own_statuses() -> None:
    from tests.support.toy_domain import ToyDomain

    class Reworded(ToyDomain):
        kind = "toy.reworded"
        config_table = "toy_reworded"
        outcomes: ClassVar = {**ToyDomain.outcomes, "unknown": ToyDomain.outcomes["lit"]}

    with pytest.raises(ValueError, match=r"outcomes \['unknown'\] are the executor's own"):
        register(Reworded())
