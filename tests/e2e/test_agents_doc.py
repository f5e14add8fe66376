"""docs/agents.md's worked Python example, as written, against the in-process bot: only its
URL is replaced. The test is the operator who confirms on the card; the example prints the
fill, marked simulated."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
from typing import Any

import pytest

from bot.agents.client import Client
from bot.agents.mcp.server import build_server
from bot.agents.mcp.serving import MCP_PATH
from bot.cli.mcp_command import cmd_mcp
from bot.cli.parser import build_parser
from tests.support.processes import ROOT
from tests.support.stack import DEV_TOKEN, Stack, StackFactory
from tests.support.waiting import eventually

GUIDE = ROOT / "docs" / "agents.md"


def example() -> str:
    [code] = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.DOTALL)
    return str(code)


async def test_the_guides_python_example_files_waits_and_prints_the_fill(
    make_stack: StackFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    stack: Stack = await make_stack("ws")
    code = example().replace("http://127.0.0.1:8080", stack.bot_url)
    assert stack.bot_url in code
    namespace: dict[str, Any] = {}
    exec(compile(code, str(GUIDE), "exec"), namespace)
    running = asyncio.create_task(namespace["order_with_a_human_in_the_loop"](DEV_TOKEN))

    async def card() -> bool:
        page = await stack.store.list_operations(limit=1)
        return bool(page.items) and page.items[0].card_message_id is not None

    await eventually(card)
    op = (await stack.store.list_operations(limit=1)).items[0]
    assert op.card_message_id is not None and op.envelope.source.reason
    reply = await stack.click(op.card_message_id, "ou_alice")
    assert reply["toast"]["type"] == "success", reply
    await asyncio.wait_for(running, 120)
    assert capsys.readouterr().out.strip() == "filled (simulated)"


async def test_the_guides_mcp_configs_and_tools_table_match_the_server() -> None:
    """What the guide tells an MCP client to run is a command the CLI takes (stdio and HTTP),
    the HTTP URL's path is the one served, and its tools table names the server's tools."""
    text = GUIDE.read_text(encoding="utf-8")
    [stdio] = [
        json.loads(block)
        for block in re.findall(r"```json\n(.*?)```", text, re.DOTALL)
        if "mcpServers" in block
    ]
    server = stdio["mcpServers"]["countersign"]
    assert server["command"] == "countersign" and "COUNTERSIGN_TOKEN" in server["env"]
    parser = build_parser()
    assert parser.parse_args(server["args"]).func.resolve() is cmd_mcp
    http_line = next(line for line in text.splitlines() if "countersign mcp --http" in line)
    http_args = shlex.split(http_line.split("countersign ", 1)[1].split("#")[0])
    assert parser.parse_args(http_args).http
    assert f'"url": "http://127.0.0.1:8765{MCP_PATH}"' in text

    tools = await build_server(Client("http://127.0.0.1:9", "unused")).list_tools()
    table = set(re.findall(r"^\| `([a-z_]+)\(", text, re.MULTILINE))
    assert table == {tool.name for tool in tools}
