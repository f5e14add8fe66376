"""Refusals: `{error: {code, message, fields?}}` with a stable code (an HTML page on /ops,
styled as the dashboard's, saying the cause and the next step), and one log line each, never
a traceback: a refusal is an answer, not a failure."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from jinja2 import Environment, PackageLoader, StrictUndefined

from bot.api.dashboard_words import label
from bot.api.web_words import WEB_LABELS
from cards.strings import Lang
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


@dataclass(frozen=True)
class Step:
    """A way on from an error page: a dashboard label (bot/api/web_words.py) and a local path."""

    key: str
    href: str
    values: Mapping[str, str] = field(default_factory=dict)


TO_OPS = Step("next.ops", DASHBOARD_PATH)
PAGES = Environment(
    loader=PackageLoader("bot.api", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def request_lang(request: web.Request) -> Lang:
    """The page's language as the dashboard picks it: ?lang=, else Accept-Language."""
    asked = request.query.get("lang") or request.headers.get("Accept-Language") or ""
    return "zh" if asked.lower().startswith("zh") else "en"


def html_error(
    status: int,
    message: str,
    fields: Sequence[FieldProblem] = (),
    headers: dict[str, str] | None = None,
    *,
    lang: Lang = "en",
    steps: Sequence[Step] = (TO_OPS,),
) -> web.Response:
    """An error page styled as the dashboard's: what happened (`message`, the cause) and the
    ways on (`steps`: sign in again, back to the operation, /ops)."""
    title_key = f"error.{status}" if f"error.{status}" in WEB_LABELS else "error.other"
    words = partial(label, lang=lang)
    page = PAGES.get_template("dashboard/error.html").render(
        lang=lang,
        status=status,
        title=words(title_key),
        message=message,
        fields=fields,
        steps=[
            {
                "href": _with_lang(step.href, lang),
                "text": label(step.key, lang, **dict(step.values)),
            }
            for step in steps
        ],
        label=words,
        home=_with_lang(DASHBOARD_PATH, lang),
        tone="tone-grey" if status == 404 else "tone-red",
    )
    return web.Response(status=status, text=page, content_type="text/html", headers=headers)


def _with_lang(path: str, lang: Lang) -> str:
    if not path.startswith("/") or "lang=" in path:
        return path  # an absolute URL (the public one), or one that says its language
    return f"{path}{'&' if '?' in path else '?'}lang={lang}"


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
        return html_error(status, message, fields, headers, lang=request_lang(request))
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
