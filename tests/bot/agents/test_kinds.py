"""bot/agents/kinds.py: a kind's schema is shaped by its own config table when there is one, by its
defaults when it has none, and by its payload model alone when its settings cannot be made
without a table (the MCP server and `countersign kinds` then still describe it)."""

from __future__ import annotations

import pytest
from pydantic import Field

from bot.agents import kinds
from bot.config import parse
from tests.support.registry_toy import ConfiguredToy
from tests.support.toy_domain import LampV1, ToySettings
from workers.domains import registered
from workers.domains.types import Name


class TableRequired(ToySettings):
    lamps: list[Name] = Field(min_length=1)  # no default: this kind needs its table


class StrictToy(ConfiguredToy):
    kind = "toy.strict"
    config_table = "toy_strict"
    settings_model = TableRequired


def test_the_schema_is_shaped_by_the_table_else_the_defaults_else_the_model() -> None:
    with registered(ConfiguredToy()) as toy, registered(StrictToy()) as strict:
        assert {toy.kind, strict.kind} <= set(kinds.names())
        configured = parse(
            {"domains": {"toy": {"lamps": ["desk"]}, "toy_strict": {"lamps": ["a"]}}}
        )
        lamp = kinds.payload_schema(toy, configured)["properties"]["lamp"]
        assert lamp["enum"] == ["desk"]
        assert kinds.payload_schema(strict, configured)["properties"]["lamp"]["enum"] == ["a"]

        # no config: the toy's defaults (no lamps, so nothing narrows it); the strict one's
        # settings need a table, so its payload model describes it
        assert kinds.payload_schema(toy, None) == LampV1.model_json_schema()
        assert kinds.settings_of(strict, None) is None
        assert kinds.described(strict, None)["payload_schema"] == LampV1.model_json_schema()

        with pytest.raises(kinds.UnknownKind, match=r"use one of .*toy\.strict"):
            kinds.plugin_of("toy.nothing")
