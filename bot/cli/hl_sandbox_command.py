"""`countersign hl-sandbox`: serve the local Hyperliquid (hlsandbox/) for dev, demos and tests."""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.cli.errors import EXIT_USAGE, CommandError

SDK_MODULES = ("hyperliquid", "eth_account", "eth_utils", "msgpack")
INSTALL_HINT = "hl-sandbox needs the Hyperliquid SDK: pip install 'countersign[hyperliquid]'"


def add_hl_sandbox(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub = commands.add_parser("hl-sandbox", help="run the local Hyperliquid (emulator)")
    sub.add_argument("--host", default="127.0.0.1")
    sub.add_argument("--port", type=int, default=3001)
    seeding = sub.add_mutually_exclusive_group()
    seeding.add_argument("--seed", help="JSON seed file: universe, marks, accounts")
    seeding.add_argument(
        "--demo", action="store_true", help="add one funded account and an approved agent"
    )
    sub.set_defaults(func=cmd_hl_sandbox)


def cmd_hl_sandbox(args: argparse.Namespace) -> int:
    import asyncio  # here: the parser imports this module for add_hl_sandbox

    # the sandbox verifies signatures with the SDK's own code: without it, one line saying so
    try:
        from hlsandbox.serve import serve
        from hlsandbox.universe import load_seed
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] in SDK_MODULES:
            raise CommandError(INSTALL_HINT, EXIT_USAGE) from None
        raise

    seed = None
    if args.seed:
        try:
            seed = load_seed(Path(args.seed))
        except (OSError, ValueError) as error:  # JSONDecodeError is a ValueError
            raise CommandError(f"--seed {args.seed}: {error}", EXIT_USAGE) from None
    try:
        asyncio.run(serve(args.host, args.port, seed=seed, demo=args.demo))
    except OSError as error:
        raise CommandError(f"--port {args.port}: {error}", EXIT_USAGE) from None
    return 0
