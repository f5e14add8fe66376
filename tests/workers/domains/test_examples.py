"""Every registered domain's examples file as shown against config.example.toml, so an
example (shown by the docs, the MCP server and `countersign kinds`) never rots: each one
validates against its kind's newest schema, and its domain admits it against the settings
the example config gives that domain."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import Settings, read_file
from tests.support.processes import ROOT
from workers.domains import DOMAINS
from workers.domains.base import Example

EXAMPLE_CONFIG = ROOT / "config.example.toml"
EXAMPLES = [
    pytest.param(kind, example, id=f"{kind}:{example.name}")
    for kind, plugin in sorted(DOMAINS.items())
    for example in plugin.examples
]


@pytest.fixture(scope="module")
def settings() -> Settings:
    return read_file(Path(EXAMPLE_CONFIG))


def test_every_registered_domain_shows_at_least_one_example() -> None:
    assert DOMAINS
    for kind, plugin in DOMAINS.items():
        assert plugin.examples, f"{kind} has no examples"
        names = [example.name for example in plugin.examples]
        assert len(names) == len(set(names)), f"{kind} repeats an example name"
        assert all(example.summary.strip() for example in plugin.examples), kind


@pytest.mark.parametrize(("kind", "example"), EXAMPLES)
def test_an_example_validates_and_is_admitted_by_the_example_config(
    settings: Settings, kind: str, example: Example
) -> None:
    plugin = DOMAINS[kind]
    model = plugin.schema(plugin.versions[-1])
    assert model is not None
    payload = model.model_validate(dict(example.payload))
    own = settings.domains.for_kind(kind)
    assert plugin.admit(payload, own) == [], example.name
    # the projection it would show names its terms (the card has something to show)
    assert plugin.project(payload)["terms"], example.name
