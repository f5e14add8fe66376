"""JSON error responses: `{error: {code, message, fields?}}` with a stable code."""

from __future__ import annotations

from collections.abc import Sequence

from aiohttp import web

from store.problems import FieldProblem


def error_response(
    status: int,
    code: str,
    message: str,
    fields: Sequence[FieldProblem] = (),
    headers: dict[str, str] | None = None,
) -> web.Response:
    error: dict[str, object] = {"code": code, "message": message}
    if fields:
        error["fields"] = [problem.as_json() for problem in fields]
    return web.json_response({"error": error}, status=status, headers=headers)
