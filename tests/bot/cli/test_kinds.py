"""`countersign kinds [KIND]`: every registered kind in a line, and one kind's schema and
examples, read from the registry, so a domain registered before the command runs (the toy of
tests/support) is listed like a built-in one; `propose --help` names the kinds too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from bot.agents.kinds import settings_of
from bot.cli import main
from cards.strings import text
from cards.world import world_words
from tests.support.processes import cli
from tests.support.registry_toy import ConfiguredToy
from tests.support.toy_domain import EXAMPLES, KIND
from tests.support.world_toy import WorldLamp
from workers.domains import DOMAINS, registered

TOY_CONFIG = """\
[[proposers]]
name = "dev-agent"
token_env = "COUNTERSIGN_TOKEN"

[domains.toy]
lamps = ["desk", "hall"]
"""


def worlds_column(line: str) -> str:
    """The second column of a kind's line: the worlds it may act in (it may hold a space)."""
    return line[20:41].strip()


def defaults(kind: str) -> BaseModel:
    plugin = DOMAINS[kind]
    settings = settings_of(plugin, None)
    assert settings is not None, kind
    return settings


@pytest.fixture(autouse=True)
def no_config_here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No config unless a test names one: each domain's defaults shape its schema."""
    monkeypatch.delenv("COUNTERSIGN_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)


async def test_the_real_command_lists_every_registered_kind_in_a_line() -> None:
    listed = await cli("kinds", cwd=Path.cwd())
    assert listed.code == 0, listed.err
    lines = listed.out.splitlines()
    assert [line.split()[0] for line in lines] == sorted(DOMAINS)
    for line, kind in zip(lines, sorted(DOMAINS), strict=True):
        plugin = DOMAINS[kind]
        # the worlds the kind may act in with its defaults, in the catalogue's words
        worlds = ",".join(world_words(world, "en") for world in plugin.worlds(defaults(kind)))
        assert worlds_column(line) == (worlds or text("world.none", "en"))
        assert line.endswith(f"[domains.{plugin.config_table}]")
        assert ("moves an amount" in line) == plugin.moves_amount

    as_json = await cli("kinds", "--json", cwd=Path.cwd())
    assert [k["kind"] for k in json.loads(as_json.out)] == sorted(DOMAINS)


def test_one_kind_shows_its_schema_and_the_examples_it_ships(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for kind, plugin in DOMAINS.items():
        assert main(["kinds", kind]) == 0
        shown = json.loads(capsys.readouterr().out)
        model = plugin.schema(plugin.versions[-1])
        assert model is not None
        assert shown["kind"] == kind and shown["schema_version"] == plugin.versions[-1]
        assert set(shown["payload_schema"]["properties"]) == set(model.model_fields)
        assert [e["payload"] for e in shown["examples"]] == [
            dict(e.payload) for e in plugin.examples
        ]


def test_a_domain_registered_before_the_command_is_listed_and_shaped_by_its_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "toy.toml"
    config.write_text(TOY_CONFIG, encoding="utf-8")
    with registered(ConfiguredToy()):
        assert main(["kinds"]) == 0
        [line] = [line for line in capsys.readouterr().out.splitlines() if KIND in line]
        assert worlds_column(line) == "SIMULATED"
        assert line.split() == [KIND, "SIMULATED", "no", "amount", "[domains.toy]"]

        assert main(["kinds", KIND, "--config", str(config)]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown["payload_schema"]["properties"]["lamp"]["enum"] == ["desk", "hall"]
        assert [e["name"] for e in shown["examples"]] == [e.name for e in EXAMPLES]

        with pytest.raises(SystemExit):
            main(["propose", "--help"])
        assert KIND in capsys.readouterr().out.replace("\n", " ")
    assert main(["kinds"]) == 0
    assert KIND not in capsys.readouterr().out  # unregistered again


def test_an_unknown_kind_is_a_usage_error_naming_the_known_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["kinds", "crypto.swap"]) == 2
    err = capsys.readouterr().err
    assert "unknown kind 'crypto.swap'" in err
    assert all(kind in err for kind in DOMAINS)


def test_a_kind_says_the_worlds_it_may_act_in(capsys: pytest.CaptureFixture[str]) -> None:
    """The world its `worlds()` names (here EMULATOR), in the line and in --json; a kind that
    is not a venue (a message) names none."""
    with registered(WorldLamp()):
        assert main(["kinds"]) == 0
        lines = capsys.readouterr().out.splitlines()
        [lamp] = [line for line in lines if line.startswith(KIND)]
        assert worlds_column(lamp) == "EMULATOR"
        [message] = [line for line in lines if line.startswith("message.send")]
        assert worlds_column(message) == text("world.none", "en")

        assert main(["kinds", "--json"]) == 0
        listed = {k["kind"]: k for k in json.loads(capsys.readouterr().out)}
        assert (listed[KIND]["worlds"], listed[KIND]["simulated"]) == (["emulator"], True)
        assert listed["message.send"]["worlds"] == []
