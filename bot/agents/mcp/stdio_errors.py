"""The JSON-RPC error that answers a stdio line the MCP SDK could not read. Pure.

The SDK's stdio transport hands an unreadable line to the server as an exception, and the
server drops it without a word: a client waiting for its answer hangs. JSON-RPC 2.0 says
what to answer instead: -32700 (parse error, id null) for text that is not JSON, which
includes JSON nested deeper than the SDK's parser goes, and -32600 (invalid request) for
JSON that is not a JSON-RPC message, with the line's id when it has a readable one.
"""

from __future__ import annotations

from typing import Any

from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

PARSE_MESSAGE = "parse error: the line is not JSON (or is nested too deeply)"
INVALID_MESSAGE = "invalid request: the line is JSON but not a JSON-RPC 2.0 message"


def _line_id(error: ValidationError) -> str | int | None:
    """The id of the message the error is about, if its top level had a usable one."""
    for detail in error.errors():
        found = detail.get("input")
        if isinstance(found, dict):
            request_id = found.get("id")
            if isinstance(request_id, str) or (
                isinstance(request_id, int) and not isinstance(request_id, bool)
            ):
                return request_id
    return None


def _blank(error: ValidationError) -> bool:
    details = error.errors()
    return bool(details) and all(
        d["type"] == "json_invalid" and isinstance(d.get("input"), str) and not d["input"].strip()
        for d in details
    )


def error_reply(error: Exception) -> JSONRPCError | None:
    """The reply to the line `error` was raised for; None for a blank line (nothing was
    asked, and a keep-alive newline must not draw an error)."""
    if not isinstance(error, ValidationError):  # nothing of the line to go by
        return _reply(PARSE_ERROR, PARSE_MESSAGE, None)
    if _blank(error):
        return None
    if any(detail["type"] == "json_invalid" for detail in error.errors()):
        return _reply(PARSE_ERROR, PARSE_MESSAGE, None)
    return _reply(INVALID_REQUEST, INVALID_MESSAGE, _line_id(error))


def _reply(code: int, message: str, request_id: Any) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))
