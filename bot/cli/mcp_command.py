"""`countersign mcp`: the MCP server for one proposer, over stdio (default) or HTTP."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from bot.app.logs import configure
from bot.cli.api_commands import client_of
from bot.cli.common import settings_if_any

EXIT_REFUSED = 2


def cmd_mcp(args: argparse.Namespace) -> int:
    # the SDK and its web server are imported only by this command
    from bot.agents.mcp.http_guard import GuardError, guard_for
    from bot.agents.mcp.serving import LISTENING, serve_http, serve_stdio

    configure()  # logs go to stderr: on stdio, stdout is the protocol's
    if not args.http:
        # a server: one aiohttp session for all its calls
        asyncio.run(serve_stdio(client_of(args, stdlib=False), settings_if_any(args)))
        return 0
    try:  # before anything starts: who may talk to it (bot/agents/mcp/http_guard.py)
        guard = guard_for(args.host, os.environ)
    except GuardError as refused:
        print(f"countersign mcp: {refused}", file=sys.stderr)
        return EXIT_REFUSED
    client = client_of(args, stdlib=False)
    settings = settings_if_any(args)
    needs = " with its bearer token" if guard.token is not None else ""

    def ready(url: str) -> None:
        print(f"{LISTENING}{url} (acting as the proposer whose token it holds{needs})", flush=True)

    asyncio.run(serve_http(client, args.host, args.port, guard, ready, settings))
    print("countersign MCP stopped", file=sys.stderr)
    return 0
