"""`countersign kinds [KIND]`: the operation kinds this install takes, read from the registry;
with KIND, its payload schema (as the config here shapes it) and example payloads."""

from __future__ import annotations

import argparse
import json
from typing import Any

from bot.agents import kinds
from bot.cli.common import settings_if_any
from bot.cli.errors import EXIT_USAGE, CommandError
from cards.strings import text
from cards.world import world_words
from store import World


def kind_line(summary: dict[str, Any]) -> str:
    """The kind, the worlds it may act in here (SIMULATED, EMULATOR, TESTNET, LIVE; none for
    a kind that is not a venue), whether it moves an amount, its config table."""
    worlds = ",".join(world_words(World(world), "en") for world in summary["worlds"])
    where = worlds or text("world.none", "en")
    amount = "moves an amount" if summary["moves_amount"] else "no amount"
    return f"{summary['kind']:<20} {where:<20} {amount:<16} [{summary['config_table']}]"


def cmd_kinds(args: argparse.Namespace) -> int:
    if args.kind is None:
        settings = settings_if_any(args)
        summaries = [kinds.summary(kinds.plugin_of(name), settings) for name in kinds.names()]
        if args.json:
            print(json.dumps(summaries, ensure_ascii=False, indent=2))
        else:
            print("\n".join(kind_line(summary) for summary in summaries))
        return 0
    try:
        plugin = kinds.plugin_of(args.kind)
    except kinds.UnknownKind as unknown:
        raise CommandError(str(unknown), EXIT_USAGE) from None
    described = kinds.described(plugin, settings_if_any(args))
    print(json.dumps(described, ensure_ascii=False, indent=2))
    return 0
