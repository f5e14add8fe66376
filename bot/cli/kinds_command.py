"""`countersign kinds [KIND]`: the operation kinds this install takes, read from the registry;
with KIND, its payload schema (as the config here shapes it) and example payloads."""

from __future__ import annotations

import argparse
import json

from bot import kinds
from bot.cli.common import EXIT_USAGE, CommandError, settings_if_any


def kind_line(summary: dict[str, object]) -> str:
    simulated = "simulated" if summary["simulated"] else "live"
    amount = "moves an amount" if summary["moves_amount"] else "no amount"
    return f"{summary['kind']:<20} {simulated:<10} {amount:<16} [{summary['config_table']}]"


def cmd_kinds(args: argparse.Namespace) -> int:
    if args.kind is None:
        summaries = [kinds.summary(kinds.plugin_of(name)) for name in kinds.names()]
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
