"""`countersign mcp`: the MCP server for one proposer, over stdio (default) or HTTP."""

from __future__ import annotations

import argparse
import asyncio
import sys

from bot.cli.api_commands import client_of
from bot.logs import configure

DEFAULT_MCP_PORT = 8765


def cmd_mcp(args: argparse.Namespace) -> int:
    # the SDK and its web server are imported only by this command
    from bot.mcp.serving import LISTENING, serve_http, serve_stdio

    configure()  # logs go to stderr: on stdio, stdout is the protocol's
    client = client_of(args)
    if not args.http:
        asyncio.run(serve_stdio(client))
        return 0

    def ready(url: str) -> None:
        print(f"{LISTENING}{url} (acting as the proposer whose token it holds)", flush=True)

    asyncio.run(serve_http(client, args.host, args.port, on_ready=ready))
    print("countersign MCP stopped", file=sys.stderr)
    return 0
