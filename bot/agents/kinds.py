"""The registered kinds as agents and people read them: the MCP server's kind list and
resources, `countersign kinds`. Everything is asked of the registry (`workers.domains`) at the
moment it is read, so a domain registered at run time is described like a built-in one, and
a kind's payload schema is the one its own configured settings give (a domain may narrow it
by its config, e.g. to the names it was configured with). Pure.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from bot.config import Settings
from workers.domains import DOMAINS
from workers.domains.checked import Plugin


class UnknownKind(LookupError):
    """No registered domain has this kind."""

    def __init__(self, kind: str) -> None:
        known = ", ".join(sorted(DOMAINS)) or "none registered"
        super().__init__(f"unknown kind {kind!r}: use one of {known}")


def names() -> list[str]:
    return sorted(DOMAINS)


def plugin_of(kind: str) -> Plugin:
    plugin = DOMAINS.get(kind)
    if plugin is None:
        raise UnknownKind(kind)
    return plugin


def settings_of(plugin: Plugin, settings: Settings | None) -> BaseModel | None:
    """The domain's settings: its table of a loaded config, else its defaults (None: its
    settings need a config table, so only the payload models can describe it)."""
    if settings is not None:
        try:
            return settings.domains.for_kind(plugin.kind)
        except (KeyError, ValidationError):  # its table is absent and its defaults incomplete
            pass
    try:
        return plugin.settings_model()
    except ValidationError:
        return None


def payload_schema(plugin: Plugin, settings: Settings | None) -> dict[str, Any]:
    """The JSON schema of the kind's newest payload, as its configured settings shape it."""
    own = settings_of(plugin, settings)
    if own is not None:
        return plugin.payload_schema(own)
    model = plugin.schema(plugin.versions[-1])
    assert model is not None  # versions are the keys of payload_models
    return model.model_json_schema()


def worlds(plugin: Plugin, settings: Settings | None) -> list[str]:
    """The worlds the kind may act in with its settings here ([] for a kind that is not a
    venue; its defaults' when its settings cannot be read)."""
    own = settings_of(plugin, settings)
    return [] if own is None else [world.value for world in plugin.worlds(own)]


def summary(plugin: Plugin, settings: Settings | None = None) -> dict[str, Any]:
    """One kind in a line: what it is called, where it is configured, what it does."""
    return {
        "kind": plugin.kind,
        "title": plugin.words.title.as_json(),
        "simulated": plugin.simulated,
        # which worlds it may act in (store.vocabulary.World), as its config here names them
        "worlds": worlds(plugin, settings),
        "moves_amount": plugin.moves_amount,
        "config_table": f"domains.{plugin.config_table}",
        "schema_versions": list(plugin.versions),
    }


def examples(plugin: Plugin) -> list[dict[str, Any]]:
    """Payloads that file as shown against config.example.toml."""
    return [
        {"name": example.name, "summary": example.summary, "payload": dict(example.payload)}
        for example in plugin.examples
    ]


def described(plugin: Plugin, settings: Settings | None) -> dict[str, Any]:
    """Everything an agent needs to propose the kind: its line, schema and examples."""
    return {
        **summary(plugin, settings),
        "schema_version": plugin.versions[-1],
        "payload_schema": payload_schema(plugin, settings),
        "examples": examples(plugin),
    }
