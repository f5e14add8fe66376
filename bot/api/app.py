"""The proposal/read HTTP API and health routes (aiohttp).

Handlers parse, authorize, call the store, render the one projection.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from bot.api.auth import ProposerAuth, RateLimiter
from bot.api.dashboard import Dashboard
from bot.api.errors import error_response
from bot.api.health import Health
from bot.api.intake import CapabilitiesUnavailable, Forbidden, build_draft
from bot.api.metrics import metrics_text
from bot.config import Config, Proposer
from store.authority import MAX_PAGE_SIZE, InvalidCursor, RequestConflict, Store
from store.canonical import loads_strict
from store.execution import view as op_view
from store.execution import views as op_views
from store.lifecycle import IllegalTransition, State
from store.problems import FieldProblem, ProblemsFound
from store.records import Operation

log = logging.getLogger("countersign.api")

CONFIG_KEY = web.AppKey("config", Config)
STORE_KEY = web.AppKey("store", Store)
AUTH_KEY = web.AppKey("auth", ProposerAuth)
LIMITER_KEY = web.AppKey("limiter", RateLimiter)
HEALTH_KEY = web.AppKey("health", Health)
ON_PROPOSED_KEY: web.AppKey[Callable[[], None]] = web.AppKey("on_proposed")
# kind -> a read of its adapter's capabilities (what it could ever execute)
CapabilityReaders = Mapping[str, Callable[[], Awaitable[Any]]]
CAPABILITIES_KEY: web.AppKey[CapabilityReaders] = web.AppKey("capabilities")
PROPOSER_KEY = web.RequestKey("proposer", Proposer)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPRequestEntityTooLarge:
        cap = request.app[CONFIG_KEY].settings.http.max_body_bytes
        return error_response(
            413,
            "body_too_large",
            f"the request body exceeds {cap} bytes",
            [FieldProblem("$", "body too large", f"keep requests under {cap} bytes")],
        )
    except web.HTTPNotFound:
        return error_response(404, "not_found", f"no route {request.method} {request.path}")
    except web.HTTPMethodNotAllowed:
        return error_response(405, "method_not_allowed", f"{request.method} is not allowed here")
    except web.HTTPException:
        raise
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return error_response(500, "internal", "internal error; the request may be retried")


@web.middleware
async def proposer_auth(request: web.Request, handler: Handler) -> web.StreamResponse:
    if not request.path.startswith("/api/"):
        return await handler(request)
    proposer = request.app[AUTH_KEY].identify(request.headers.get("Authorization"))
    if proposer is None:
        return error_response(
            401,
            "unauthorized",
            "missing or unknown proposer token",
            headers={"WWW-Authenticate": 'Bearer realm="countersign"'},
        )
    wait = request.app[LIMITER_KEY].take(proposer.name)
    if wait > 0:
        return error_response(
            429,
            "rate_limited",
            f"proposer {proposer.name!r} is over its request rate; retry later",
            headers={"Retry-After": str(max(1, math.ceil(wait)))},
        )
    request[PROPOSER_KEY] = proposer
    return await handler(request)


def _proposer(request: web.Request) -> Proposer:
    return request[PROPOSER_KEY]


def _problems(error: ProblemsFound) -> web.Response:
    return error_response(
        422, error.code, "the request is invalid; nothing was stored", error.problems
    )


async def propose(request: web.Request) -> web.Response:
    proposer = _proposer(request)
    raw = await request.read()
    try:
        body = loads_strict(raw)
    except ValueError as error:
        return error_response(
            422,
            "invalid_json",
            f"the body is not valid JSON ({error})",
            [FieldProblem("$", "not valid JSON", "send a UTF-8 JSON object")],
        )
    settings = request.app[CONFIG_KEY].settings
    try:
        capabilities = await _capabilities(request, body)
        draft = build_draft(body, proposer.settings, settings, capabilities)
    except ProblemsFound as error:
        return _problems(error)
    except Forbidden as error:
        return error_response(403, error.code, str(error))
    except CapabilitiesUnavailable as error:
        return error_response(503, "capabilities_unavailable", f"{error}; nothing was stored")
    try:
        proposed = await request.app[STORE_KEY].propose(draft)
    except RequestConflict as error:
        return error_response(
            409,
            "request_id_conflict",
            f"request_id {draft.source.request_id!r} was already used for operation "
            f"{error.operation_id} with different content; use a new request_id",
            [
                FieldProblem(field, "differs from the first request", "use a new request_id")
                for field in error.fields
            ],
        )
    if proposed.created:
        request.app[ON_PROPOSED_KEY]()  # the card worker need not wait for its next poll
    view = await op_view(request.app[STORE_KEY], proposed.operation)
    return web.json_response(view, status=201 if proposed.created else 200)


async def _capabilities(request: web.Request, body: Any) -> Any:
    """The capabilities of the adapter for the body's kind, read fresh (None if it has none)."""
    kind = body.get("kind") if isinstance(body, dict) else None
    if not isinstance(kind, str) or (read := request.app[CAPABILITIES_KEY].get(kind)) is None:
        return None
    try:
        return await read()
    except Exception as error:
        log.warning("reading the %s adapter's capabilities failed: %s", kind, error)
        raise CapabilitiesUnavailable(kind) from None


async def _own_operation(request: web.Request) -> Operation | None:
    """The operation if it exists and belongs to this proposer; others' look absent."""
    op = await request.app[STORE_KEY].get(request.match_info["id"])
    if op is None or op.envelope.source.proposer != _proposer(request).name:
        return None
    return op


def _not_found(request: web.Request) -> web.Response:
    return error_response(404, "not_found", f"no operation {request.match_info['id']!r}")


MAX_WAIT_S = 60
WAIT_POLL_S = 0.2  # a change made by another process (a worker replica) shows within this


async def get_operation(request: web.Request) -> web.Response:
    """The projection; with `wait_s=N` (N <= 60) it first waits until the operation changes
    (its version moves) or N seconds pass, so a proposer can long-poll for the outcome."""
    wait_text = request.query.get("wait_s")
    wait_s = 0
    if wait_text is not None:
        if not wait_text.isdigit() or int(wait_text) > MAX_WAIT_S:
            return error_response(
                422,
                "invalid_query",
                "the query is invalid",
                [
                    FieldProblem(
                        "wait_s",
                        f"{wait_text!r} is not a whole number of seconds 0..{MAX_WAIT_S}",
                        f"wait at most {MAX_WAIT_S} s, then ask again",
                    )
                ],
            )
        wait_s = int(wait_text)
    op = await _own_operation(request)
    if op is None:
        return _not_found(request)
    store = request.app[STORE_KEY]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    seen = op.version
    while loop.time() < deadline:
        await asyncio.sleep(min(WAIT_POLL_S, max(0.0, deadline - loop.time())))
        fresh = await store.get(op.id)
        if fresh is not None:
            op = fresh
            if fresh.version != seen:
                break
    return web.json_response(await op_view(store, op))


async def list_operations(request: web.Request) -> web.Response:
    problems: list[FieldProblem] = []
    state = None
    if state_text := request.query.get("state"):
        try:
            state = State(state_text)
        except ValueError:
            problems.append(
                FieldProblem(
                    "state", f"unknown state {state_text!r}", f"use one of {', '.join(State)}"
                )
            )
    limit = MAX_PAGE_SIZE
    if limit_text := request.query.get("limit"):
        if not limit_text.isdigit() or not 1 <= int(limit_text) <= MAX_PAGE_SIZE:
            problems.append(
                FieldProblem(
                    "limit", f"{limit_text!r} is not 1..{MAX_PAGE_SIZE}", "pick a smaller page"
                )
            )
        else:
            limit = int(limit_text)
    if problems:
        return error_response(422, "invalid_query", "the query is invalid", problems)
    try:
        page = await request.app[STORE_KEY].list_operations(
            state=state,
            limit=limit,
            cursor=request.query.get("cursor") or None,
            proposer=_proposer(request).name,
        )
    except InvalidCursor as error:
        return error_response(
            422,
            "invalid_query",
            str(error),
            [FieldProblem("cursor", str(error), "start over without it")],
        )
    return web.json_response(
        {
            "items": await op_views(request.app[STORE_KEY], page.items),
            "next_cursor": page.next_cursor,
            "has_more": page.has_more,
        }
    )


async def cancel_operation(request: web.Request) -> web.Response:
    if await _own_operation(request) is None:
        return _not_found(request)
    try:
        op = await request.app[STORE_KEY].cancel(
            request.match_info["id"], f"proposer:{_proposer(request).name}"
        )
    except IllegalTransition as error:
        return error_response(
            409,
            "not_cancellable",
            f"the operation is {error.current.value}; only unclaimed operations can be cancelled",
        )
    return web.json_response(await op_view(request.app[STORE_KEY], op))


async def healthz(_request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    status, body = await request.app[HEALTH_KEY].report()
    return web.json_response(body, status=status)


async def metrics(request: web.Request) -> web.Response:
    body = await metrics_text(request.app[HEALTH_KEY])
    return web.Response(body=body, content_type="text/plain", charset="utf-8")


def create_app(
    config: Config,
    store: Store,
    *,
    health: Health | None = None,
    on_proposed: Callable[[], None] = lambda: None,
    capabilities: CapabilityReaders | None = None,
) -> web.Application:
    http = config.settings.http
    app = web.Application(
        middlewares=[json_errors, proposer_auth], client_max_size=http.max_body_bytes
    )
    app[CONFIG_KEY] = config
    app[STORE_KEY] = store
    app[AUTH_KEY] = ProposerAuth(config.proposers)
    app[LIMITER_KEY] = RateLimiter(http.proposer_rate_per_s, http.proposer_burst)
    app[HEALTH_KEY] = health or Health(config, store, None, None)
    app[ON_PROPOSED_KEY] = on_proposed
    app[CAPABILITIES_KEY] = capabilities or {}
    app.router.add_post("/api/v1/operations", propose)
    app.router.add_get("/api/v1/operations", list_operations)
    app.router.add_get("/api/v1/operations/{id}", get_operation)
    app.router.add_post("/api/v1/operations/{id}/cancel", cancel_operation)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    Dashboard(store, config.dashboard_token.get_secret_value() or None).routes(app)
    return app
