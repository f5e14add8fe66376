"""Running the MCP server: over stdio (an MCP client starts `countersign mcp` itself) or over
streamable HTTP (`countersign mcp --http`, path /mcp), until stdin closes or a signal."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import AsyncIterator, Callable

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus
from starlette.types import ASGIApp

from bot.agents.client import Client
from bot.agents.mcp.http_guard import BearerGate, HttpGuard
from bot.agents.mcp.server import build_server
from bot.agents.mcp.stdio import run_stdio
from bot.agents.mcp.watch import Follower
from bot.config import Settings

MCP_PATH = "/mcp"
LISTENING = "countersign MCP listening on "


@contextlib.asynccontextmanager
async def serving(client: Client, settings: Settings | None) -> AsyncIterator[MCPServer]:
    """The server, its client and its followers, closed after; `settings` (a loaded config,
    or None) shape the kinds' schemas."""
    follower = Follower(client, InMemorySubscriptionBus())
    async with client:
        try:
            yield build_server(client, follower, settings)
        finally:
            await follower.close()


async def serve_stdio(client: Client, settings: Settings | None = None) -> None:
    async with serving(client, settings) as server:
        await run_stdio(server)  # a line it cannot read gets a JSON-RPC error, not silence


async def serve_http(
    client: Client,
    host: str,
    port: int,
    guard: HttpGuard,
    on_ready: Callable[[str], None] = lambda _url: None,
    settings: Settings | None = None,
) -> None:
    """Streamable HTTP on host:port, behind `guard` (bot/agents/mcp/http_guard.py): requests whose
    Host or Origin names another host are refused (DNS rebinding), and with a token, those
    that do not carry it."""
    async with serving(client, settings) as mcp_server:
        await _serve_http(mcp_server, host, port, guard, on_ready)


async def _serve_http(
    mcp_server: MCPServer,
    host: str,
    port: int,
    guard: HttpGuard,
    on_ready: Callable[[str], None],
) -> None:
    mcp_app = mcp_server.streamable_http_app(host=host, transport_security=guard.security)
    app: ASGIApp = mcp_app if guard.token is None else BearerGate(mcp_app, guard.token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    loop = asyncio.get_running_loop()
    # uvicorn traps SIGINT/SIGTERM, stops gracefully, then raises the signal again; a handler
    # of our own takes that second one, so a stop is exit status 0
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, lambda: setattr(server, "should_exit", True))

    # bound before serving: connections wait in the backlog, so "listening" is true at once
    # (and a busy port fails here, before anything started)
    sock = socket.create_server((host, port), reuse_port=False)
    on_ready(f"http://{host}:{sock.getsockname()[1]}{MCP_PATH}")
    await server.serve(sockets=[sock])
