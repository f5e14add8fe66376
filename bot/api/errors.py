"""Refusals: `{error: {code, message, fields?}}` with a stable code (an HTML page on /ops),
and one log line each, never a traceback: a refusal is an answer, not a failure."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from html import escape

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from kernel.problems import FieldProblem

log = logging.getLogger("countersign.api")

DASHBOARD_PATH = "/ops"


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


def html_error(
    status: int,
    message: str,
    fields: Sequence[FieldProblem] = (),
    headers: dict[str, str] | None = None,
) -> web.Response:
    items = "".join(
        f"<li><b>{escape(p.field)}</b>: {escape(p.reason)} ({escape(p.fix)})</li>" for p in fields
    )
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{status}</title></head><body><h1>{status}</h1><p>{escape(message)}</p>"
        f"{f'<ul>{items}</ul>' if items else ''}"
        '<p><a href="/ops">all operations</a></p></body></html>'
    )
    return web.Response(status=status, text=page, content_type="text/html", headers=headers)


def is_dashboard(path: str) -> bool:
    return path == DASHBOARD_PATH or path.startswith(DASHBOARD_PATH + "/")


def refuse(
    request: web.Request,
    status: int,
    code: str,
    message: str,
    fields: Sequence[FieldProblem] = (),
    headers: dict[str, str] | None = None,
) -> web.Response:
    """The refusal of `request`, logged once (path only: a query may carry a token)."""
    named = f" {[p.field for p in fields]}" if fields else ""  # repr: no raw newlines
    log.info("refused %s %r: %d %s%s", request.method, request.path, status, code, named)
    if is_dashboard(request.path):
        return html_error(status, message, fields, headers)
    return error_response(status, code, message, fields, headers)


class OneLineForMalformedRequests(logging.Filter):
    """aiohttp logs a request its parser refuses (bytes no URL may hold, a broken header line)
    with a traceback, and the message quotes the request line, query and all (a dashboard
    token may be in it). It is the client's fault: one INFO line, no traceback, no request."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError) and error.code < 500:
            peer = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
            record.msg = "refused a request that does not parse, from %s: %d %s"
            record.args = (peer, error.code, type(error).__name__)
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


wire_log = logging.getLogger("countersign.http")
wire_log.addFilter(OneLineForMalformedRequests())
