"""The API's middlewares, outermost first: page headers, JSON errors, header bytes, Host names,
the dashboard's one origin, proposer auth.

Each refuses with one JSON error naming the fix (bot/api/errors.py) before a handler runs.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable

from aiohttp import web

from bot.api.auth import peer_key
from bot.api.dashboard_words import label
from bot.api.errors import (
    TO_OPS,
    Step,
    error_response,
    html_error,
    is_dashboard,
    refuse,
    request_lang,
)
from bot.api.hosts import host_allowed, moved_to, proxied
from bot.api.keys import (
    AUTH_KEY,
    CANCEL_ROUTE,
    CONFIG_KEY,
    HOSTS_KEY,
    LIMITER_KEY,
    PEER_LIMITER_KEY,
    PROPOSER_KEY,
)
from bot.api.web_words import web_label
from kernel.problems import FieldProblem

log = logging.getLogger("countersign.api")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


# No page of ours may be framed: a frame over a decoy turns one click into a decision
# (clickjacking). CSP frame-ancestors for browsers that read it, X-Frame-Options for older ones.
FRAME_HEADERS = {
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
}
# An HTML page may embed a CSRF token (the sign-out and decision forms): never kept by a cache,
# a shared proxy's or the browser's back-forward one.
NO_STORE = {"Cache-Control": "no-store"}


def _protect(response: web.StreamResponse) -> None:
    if response.prepared:  # already on the wire (nothing of ours streams today)
        return
    for name, value in FRAME_HEADERS.items():
        response.headers.setdefault(name, value)
    if response.content_type == "text/html":
        response.headers.update(NO_STORE)


@web.middleware
async def page_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every answer, a redirect or refusal too, carries the framing headers; HTML no-store."""
    try:
        response = await handler(request)
    except web.HTTPException as raised:
        _protect(raised)
        raise
    _protect(response)
    return response


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPRequestEntityTooLarge:
        cap = request.app[CONFIG_KEY].settings.http.max_body_bytes
        return refuse(
            request,
            413,
            "body_too_large",
            f"the request body exceeds {cap} bytes",
            [FieldProblem("$", "body too large", f"keep requests under {cap} bytes")],
        )
    except web.HTTPNotFound:
        return refuse(request, 404, "not_found", f"no route {request.method} {request.path}")
    except web.HTTPMethodNotAllowed:
        return refuse(request, 405, "method_not_allowed", f"{request.method} is not allowed here")
    except web.HTTPException:
        raise
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.path)
        if is_dashboard(request.path):  # a page, in the dashboard's style, with a way on
            lang = request_lang(request)
            return html_error(500, web_label("error.internal", lang), lang=lang)
        return error_response(500, "internal", "internal error; the request may be retried")


def _undecodable_header(request: web.Request) -> str | None:
    """The name of the first header whose value is not UTF-8 (aiohttp would hand it to us with
    surrogate escapes, which no later `.encode()` survives)."""
    for name, value in request.raw_headers:
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return name.decode("ascii", "replace")
    return None


@web.middleware
async def header_bytes(request: web.Request, handler: Handler) -> web.StreamResponse:
    if (name := _undecodable_header(request)) is not None:
        return refuse(
            request,
            400,
            "bad_header",
            f"header {name} is not valid UTF-8; send header values as UTF-8 (or ASCII)",
        )
    return await handler(request)


HOST_BOUND_PATHS = ("/readyz", "/metrics")  # and the dashboard; see bot/api/hosts.py


@web.middleware
async def host_names(request: web.Request, handler: Handler) -> web.StreamResponse:
    bound = is_dashboard(request.path) or request.path in HOST_BOUND_PATHS
    if bound and not host_allowed(request.headers.get("Host"), request.app[HOSTS_KEY]):
        return refuse(
            request,
            421,
            "misdirected",
            "this server does not answer to that Host name (DNS-rebinding protection); "
            "if it is yours, add it to [http] allowed_hosts",
        )
    return await handler(request)


@web.middleware
async def public_origin(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The dashboard on [web] public_url's origin only (bot/api/hosts.py `moved_to`): a read
    is sent there, the same path and query; a post is refused with a page that says where."""
    public = request.app[CONFIG_KEY].settings.web.public_url
    if not public or not is_dashboard(request.path):
        return await handler(request)
    origin = moved_to(request.headers.get("Host"), request.scheme, public, proxied(request.headers))
    if origin is None:
        return await handler(request)
    if request.method in ("GET", "HEAD"):
        log.info("moved %s %r to the public origin", request.method, request.path)
        raise web.HTTPFound(origin + str(request.rel_url))
    log.info("refused %s %r: 421 not the public origin", request.method, request.path)
    lang = request_lang(request)
    return html_error(
        421,
        label("host.moved", lang, url=origin),
        lang=lang,
        steps=(Step("next.public", origin + "/ops", {"url": origin}), TO_OPS),
    )


@web.middleware
async def proposer_auth(request: web.Request, handler: Handler) -> web.StreamResponse:
    if not request.path.startswith("/api/"):
        return await handler(request)
    proposer = request.app[AUTH_KEY].identify(request.headers.get("Authorization"))
    if proposer is None:
        # Guessing is slowed per peer address; a good token from the same address still works.
        wait = request.app[PEER_LIMITER_KEY].take(peer_key(request.remote))
        if wait > 0:
            return _rate_limited(request, wait, "this address sent too many unknown tokens")
        return refuse(
            request,
            401,
            "unauthorized",
            "missing or unknown proposer token",
            headers={"WWW-Authenticate": 'Bearer realm="countersign"'},
        )
    # A cancel draws on its own bucket, so a proposer's reads can never starve its cancels.
    budget = "cancel" if request.match_info.route.name == CANCEL_ROUTE else "requests"
    wait = request.app[LIMITER_KEY].take(f"{proposer.name}\n{budget}")
    if wait > 0:
        return _rate_limited(request, wait, f"proposer {proposer.name!r} is over its {budget} rate")
    request[PROPOSER_KEY] = proposer
    return await handler(request)


def _rate_limited(request: web.Request, wait: float, why: str) -> web.Response:
    return refuse(
        request,
        429,
        "rate_limited",
        f"{why}; retry later",
        headers={"Retry-After": str(max(1, math.ceil(wait)))},
    )


MIDDLEWARES = (page_headers, json_errors, header_bytes, host_names, public_origin, proposer_auth)
