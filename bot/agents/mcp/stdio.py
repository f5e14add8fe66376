"""The MCP server over stdio, where every line gets an answer.

The SDK's stdio transport turns a line it cannot read into an exception on the server's
read stream, and the server drops it silently: the client waits forever for a reply. Here
the server reads through `AnsweringReader`, which answers such a line at once with the
JSON-RPC error `stdio_errors.error_reply` gives and goes on reading the next one.
"""

from __future__ import annotations

import contextvars
from types import TracebackType

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage

from bot.agents.mcp.stdio_errors import error_reply


class AnsweringReader:
    """The transport's read stream with its unreadable lines answered, not passed on."""

    def __init__(
        self,
        lines: ReadStream[SessionMessage | Exception],
        replies: WriteStream[SessionMessage],
    ) -> None:
        self._lines = lines
        self._replies = replies

    @property
    def last_context(self) -> contextvars.Context | None:
        # the SDK runs each message's handler in the context its sender had
        context: contextvars.Context | None = getattr(self._lines, "last_context", None)
        return context

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._lines.receive()
            if not isinstance(item, Exception):
                return item
            reply = error_reply(item)
            if reply is not None:
                await self._replies.send(SessionMessage(reply))

    def __aiter__(self) -> AnsweringReader:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._lines.aclose()

    async def __aenter__(self) -> AnsweringReader:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


async def run_stdio(server: MCPServer) -> None:
    """What `MCPServer.run_stdio_async` does, reading through `AnsweringReader`."""
    lowlevel = server._lowlevel_server  # what run_stdio_async runs; the SDK offers no hook
    async with stdio_server() as (lines, replies):
        await lowlevel.run(
            AnsweringReader(lines, replies), replies, lowlevel.create_initialization_options()
        )
