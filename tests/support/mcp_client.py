"""`countersign mcp` as an agent meets it: started as a real process, over stdio (the MCP
SDK's client spawns it) or streamable HTTP (started here, on a port it picks), and driven
by the SDK's own client. `module` runs another entry point with the same arguments (one
that registers a test's domain first: tests/support/registry_toy.py)."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import Client, StdioServerParameters

from bot.agents.mcp.serving import LISTENING
from tests.support.processes import ENV, ROOT
from tests.support.waiting import scaled

START_DEADLINE_S = 40.0
# the first message of every MCP session, for tests that speak the protocol's JSON themselves
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "countersign-tests", "version": "1"},
    },
}


CLI = "bot.cli"


def _env(token: str, extra: dict[str, str] | None) -> dict[str, str]:
    return {**ENV, "COUNTERSIGN_TOKEN": token, **(extra or {})}


@asynccontextmanager
async def http_server(
    api_url: str, token: str, module: str = CLI, env: dict[str, str] | None = None
) -> AsyncIterator[str]:
    """`countersign mcp --http` on a free port; its MCP URL. Stopped by SIGTERM after, and
    it must exit 0."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", module, "mcp", "--http", "--port", "0", "--url", api_url),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=ROOT,
        env=_env(token, env),
    )
    assert process.stdout is not None
    seen: list[str] = []
    try:
        async with asyncio.timeout(scaled(START_DEADLINE_S)):
            while not (line := (await process.stdout.readline()).decode()).startswith(LISTENING):
                assert line, "countersign mcp exited:\n" + "".join(seen)
                seen.append(line)
        yield line[len(LISTENING) :].split()[0]
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), scaled(20))
    assert code == 0, f"countersign mcp exited {code}"


@asynccontextmanager
async def connected(
    transport: str,
    api_url: str,
    token: str,
    module: str = CLI,
    env: dict[str, str] | None = None,
) -> AsyncIterator[Client]:
    """An MCP client session with `countersign mcp` acting for `token`'s proposer (`env`:
    more environment for it, e.g. COUNTERSIGN_CONFIG)."""
    if transport == "stdio":
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", module, "mcp", "--url", api_url],
            env=_env(token, env),
            cwd=str(ROOT),
        )
        async with Client(params) as client:
            yield client
        return
    async with http_server(api_url, token, module, env) as url, Client(url) as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
    """(is_error, structured content) of one tool call; the text content says the same."""
    result = await client.call_tool(tool, arguments)
    structured = result.structured_content
    assert isinstance(structured, dict), result
    [text] = result.content
    assert json.loads(text.text) == structured  # type: ignore[union-attr]
    return bool(result.is_error), structured
