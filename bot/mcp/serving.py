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

from bot.client import Client
from bot.mcp.server import build_server
from bot.mcp.watch import Follower

MCP_PATH = "/mcp"
LISTENING = "countersign MCP listening on "


@contextlib.asynccontextmanager
async def serving(client: Client) -> AsyncIterator[MCPServer]:
    """The server, its client and its followers, closed after."""
    follower = Follower(client, InMemorySubscriptionBus())
    async with client:
        try:
            yield build_server(client, follower)
        finally:
            await follower.close()


async def serve_stdio(client: Client) -> None:
    async with serving(client) as server:
        await server.run_stdio_async()


async def serve_http(
    client: Client, host: str, port: int, on_ready: Callable[[str], None] = lambda _url: None
) -> None:
    """Streamable HTTP on host:port. On a loopback host the SDK refuses requests whose Host
    or Origin names another (DNS rebinding); put a proxy with its own checks in front of
    any other binding."""
    async with serving(client) as mcp_server:
        await _serve_http(mcp_server, host, port, on_ready)


async def _serve_http(
    mcp_server: MCPServer, host: str, port: int, on_ready: Callable[[str], None]
) -> None:
    app = mcp_server.streamable_http_app(host=host)
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
