"""stdio MCP answers every line (issue 30): a malformed line or one nested too deeply gets a
JSON-RPC error (-32700, id null) instead of silence, JSON that is no JSON-RPC message gets
-32600 (with its id when it has one), and the server goes on answering. The real
`countersign mcp` process, fed raw lines on its stdin."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from mcp_types import jsonrpc_message_adapter
from pydantic import ValidationError

from bot.agents.mcp.stdio_errors import error_reply
from tests.support.processes import ENV, ROOT
from tests.support.waiting import scaled

DEEP = "[" * 100_000 + "]" * 100_000  # far beyond the SDK parser's depth
DEEP_PARAMS = '{"jsonrpc":"2.0","id":9,"method":"ping","params":' + '{"a":' * 300 + "1" + "}" * 301


def ping(request_id: int) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"})


async def answers_to(lines: list[str], expected: int) -> list[dict[str, Any]]:
    """The first `expected` replies `countersign mcp` writes back to `lines` (stdin stays open
    until they are in: at EOF the server stops, and may drop what it had not answered)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "bot.cli", "mcp", "--url", "http://127.0.0.1:9"),  # ping needs no API
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        cwd=ROOT,
        env={**ENV, "COUNTERSIGN_TOKEN": "stdio-test-token-123456"},
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("".join(f"{line}\n" for line in lines).encode())
    replies: list[dict[str, Any]] = []
    async with asyncio.timeout(scaled(60)):
        while len(replies) < expected and (line := await process.stdout.readline()):
            replies.append(json.loads(line))
        process.stdin.close()
        extra = await process.stdout.read()  # nothing more: one reply per line asked
        assert await process.wait() == 0
    assert extra.strip() == b""
    return replies


def parse_error(reply: dict[str, Any]) -> bool:
    return reply.get("id", "absent") is None and reply["error"]["code"] == -32700


async def test_a_malformed_or_too_deep_line_is_answered_and_serving_goes_on() -> None:
    replies = await answers_to(
        [
            "{not json",
            ping(1),
            DEEP,
            ping(2),
            DEEP_PARAMS,
            '{"jsonrpc":"2.0","id":3}',  # JSON, but no method: an invalid request with its id
            "[1, 2]",
            "",  # a blank line asks nothing and draws nothing
            ping(4),
        ],
        expected=8,
    )
    assert [r.get("id") for r in replies] == [None, 1, None, 2, None, 3, None, 4]
    assert parse_error(replies[0]) and parse_error(replies[2]) and parse_error(replies[4])
    assert replies[5]["error"]["code"] == -32600 and replies[6]["error"]["code"] == -32600
    assert all(replies[i]["result"] == {} for i in (1, 3, 7))


def test_the_reply_names_no_part_of_the_line() -> None:
    # the line may hold a token pasted in error: the answer never echoes it
    try:
        jsonrpc_message_adapter.validate_json('{"secret-token-xyz": ', by_name=False)
    except ValidationError as error:
        reply = error_reply(error)
    assert reply is not None and "secret-token-xyz" not in reply.model_dump_json()
