"""A tool call whose arguments do not fit the tool's schema, answered as the API answers a
bad request: a tool error whose structured content is `{code, message, fields: [{field,
reason, fix}]}`, every problem at once, instead of the SDK's pydantic text.

The SDK validates a call's arguments before the tool runs and raises `ToolError` from the
`ValidationError` (mcp.server.mcpserver.tools.base.Tool.run); `MCPServer.call_tool` is the
public method every call goes through, so the server overrides it and turns that one
failure into the structured answer. Any other failure goes on to the SDK as before.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult, TextContent
from pydantic import ValidationError

from bot.config.validation import problems_from
from kernel.problems import FieldProblem

log = logging.getLogger("countersign.mcp")

INVALID = "invalid"
INVALID_MESSAGE = "the tool's arguments are invalid; nothing was sent to countersign"
# pydantic's errors for a number outside its bounds: said as the range the schema allows
_OUT_OF_RANGE = frozenset({"greater_than_equal", "less_than_equal", "greater_than", "less_than"})


def _bounds(schema: Mapping[str, Any], loc: Sequence[int | str]) -> tuple[Any, Any] | None:
    """A top-level argument's (minimum, maximum), from its schema or the one branch of an
    optional argument's anyOf that has them; None when it lacks either."""
    if len(loc) != 1:
        return None
    found = schema.get("properties", {}).get(loc[0], {})
    for branch in [found, *found.get("anyOf", [])]:
        if "minimum" in branch and "maximum" in branch:
            return branch["minimum"], branch["maximum"]
    return None


def argument_problems(error: ValidationError, schema: Mapping[str, Any]) -> list[FieldProblem]:
    """Each argument problem as the API names a field's, a number out of range with the
    range the tool's input `schema` allows."""
    ranges = {
        str(item["loc"][0]): (item["input"], bounds)
        for item in error.errors(include_url=False)
        if item["type"] in _OUT_OF_RANGE and (bounds := _bounds(schema, item["loc"])) is not None
    }
    problems = []
    for problem in problems_from(error):
        if problem.field not in ranges:
            problems.append(problem)
            continue
        sent, (low, high) = ranges[problem.field]
        problems.append(
            FieldProblem(
                problem.field,
                f"is {sent}, outside the allowed range {low}..{high}",
                f"use a value from {low} to {high}",
            )
        )
    return problems


def refused_arguments(problems: Sequence[FieldProblem]) -> CallToolResult:
    data = {
        "code": INVALID,
        "message": INVALID_MESSAGE,
        "fields": [problem.as_json() for problem in problems],
    }
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
        is_error=True,
    )


class ArgumentCheckingServer(MCPServer):
    """An MCPServer whose tools' argument errors are structured field problems."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as failure:
            cause = failure.__cause__
            # the arguments' validation: only it raises a plain ToolError from a ValidationError
            if isinstance(failure, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            schema = next(
                (tool.input_schema for tool in await self.list_tools() if tool.name == name), {}
            )
            problems = argument_problems(cause, schema)
            log.info("tool %r refused arguments: %r", name, [p.field for p in problems])
            return refused_arguments(problems)
