"""`countersign` with one more domain registered before it runs: the toy lamp
(tests/support/toy_domain.py), here with a payload schema its config table narrows (the lamp
must be one of `[domains.toy] lamps`). Run as `python -m tests.support.registry_toy ARGS...`
with the arguments of `countersign`: a domain registered before a command starts is served
by it like a built-in one (the MCP server's kinds, schemas and examples; `countersign
kinds`), with no change to the command's modules."""

from __future__ import annotations

import sys
from typing import Any

from tests.support.toy_domain import ToyDomain, ToySettings
from workers.domains import register


class ConfiguredToy(ToyDomain):
    def payload_schema(self, settings: ToySettings) -> dict[str, Any]:
        schema = super().payload_schema(settings)
        if settings.lamps:  # an agent sees the lamps this install has
            lamp = schema["properties"]["lamp"]
            schema["properties"]["lamp"] = {**lamp, "enum": list(settings.lamps)}
        return schema


def main(argv: list[str]) -> int:
    register(ConfiguredToy())
    from bot.cli import main as countersign

    return countersign(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
