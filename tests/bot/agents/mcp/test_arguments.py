"""Tool arguments that do not fit a tool's schema are answered as the API answers a bad
request (issue 36): a tool error with `{code, message, fields}`, every problem at once, a
number out of range with the range. Nothing reaches the API: the server's client points
at a port nobody listens on."""

from __future__ import annotations

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from bot.agents.client import Client
from bot.agents.mcp.server import build_server


async def test_every_argument_problem_comes_back_structured_at_once() -> None:
    server = build_server(Client("http://127.0.0.1:9", "unused"))
    result = await server.call_tool("wait_for_operation", {"id": "01ABC", "timeout_s": 600})
    assert result.is_error and result.structured_content is not None
    assert result.structured_content["code"] == "invalid"
    assert result.structured_content["fields"] == [
        {
            "field": "timeout_s",
            "reason": "is 600, outside the allowed range 0..60",
            "fix": "use a value from 0 to 60",
        }
    ]

    result = await server.call_tool("list_operations", {"limit": 0, "cursor": 5})
    assert result.structured_content is not None
    fields = {problem["field"]: problem for problem in result.structured_content["fields"]}
    assert set(fields) == {"limit", "cursor"}  # an optional argument's range, from its anyOf
    assert fields["limit"]["fix"] == "use a value from 1 to 100" and fields["cursor"]["fix"]

    result = await server.call_tool("check_operation", {"payload": "x"})
    assert result.structured_content is not None
    named = [problem["field"] for problem in result.structured_content["fields"]]
    assert sorted(named) == ["audience", "kind", "payload"]


async def test_an_unknown_tool_is_still_the_sdks_error() -> None:
    server = build_server(Client("http://127.0.0.1:9", "unused"))
    with pytest.raises(ToolError, match="Unknown tool"):
        await server.call_tool("confirm_operation", {"id": "01ABC"})
