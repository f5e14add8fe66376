"""The proposal/read HTTP API and health routes (aiohttp).

Handlers parse, authorize, call the store, render the one projection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

from aiohttp import web
from yarl import URL

from bot.api.auth import ProposerAuth, RateLimiter
from bot.api.dashboard import OPERATION_ID, Dashboard
from bot.api.errors import refuse, wire_log
from bot.api.health import Health
from bot.api.hosts import allowed_names
from bot.api.keys import (
    AUTH_KEY,
    CANCEL_ROUTE,
    CAPABILITIES_KEY,
    CONFIG_KEY,
    HEALTH_KEY,
    HOSTS_KEY,
    LIMITER_KEY,
    ON_PROPOSED_KEY,
    PEER_LIMITER_KEY,
    PRECHECKS_KEY,
    PROPOSER_KEY,
    STOPPING_KEY,
    STORE_KEY,
    CapabilityReaders,
    PrecheckReaders,
    pause,
)
from bot.api.metrics import metrics_text
from bot.api.middlewares import MIDDLEWARES
from bot.api.people import answered
from bot.api.proposals import answer, check, propose
from bot.api.signin import SignIn
from bot.api.web_decide import WebDecisions
from bot.api.web_delegation import WebDelegations
from bot.api.web_recovery import WebRecovery
from bot.api.wire import MAX_WAIT_S
from bot.config import Config, Proposer
from bot.config.settings import zone
from cards.vocabulary import state_words
from kernel.problems import FieldProblem
from store import (
    MAX_PAGE_SIZE,
    UNTIL,
    IllegalTransition,
    InvalidCursor,
    Operation,
    OperationView,
    State,
    Store,
    Until,
    reached,
)
from store import view as op_view
from store import views as op_views

log = logging.getLogger("countersign.api")


def _proposer(request: web.Request) -> Proposer:
    return request[PROPOSER_KEY]


async def _own_operation(request: web.Request) -> Operation | None:
    """The operation if it exists and belongs to this proposer; others' look absent."""
    op = await request.app[STORE_KEY].get(request.match_info["id"])
    if op is None or op.envelope.source.proposer != _proposer(request).name:
        return None
    return op


def _not_found(request: web.Request) -> web.Response:
    return refuse(request, 404, "not_found", f"no operation {request.match_info['id']!r}")


def whole_number(text: str, low: int, high: int) -> int | None:
    """`text` as an int in low..high, or None. ASCII digits only: str.isdigit() also takes
    "٣" and "²" (int() reads the first as 3 and raises on the second)."""
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(high)):
        return None
    value = int(text)
    return value if low <= value <= high else None


WAIT_POLL_S = 0.2  # a change made by another process (a worker replica) shows within this


async def get_operation(request: web.Request) -> web.Response:
    """The projection. With `wait_s=N` (N <= 60) it first waits up to N seconds for what
    `until` names: `changed` (the default: its version moves), `decided` or `final`
    (`store.reads.projection`; final as the newest outcome's domain declared it); those two answer
    at once when the operation already is so, so a proposer that asks again never misses the
    moment between two asks."""
    problems: list[FieldProblem] = []
    wait_s = 0
    if (wait_text := request.query.get("wait_s")) is not None:
        if (given := whole_number(wait_text, 0, MAX_WAIT_S)) is None:
            problems.append(
                FieldProblem(
                    "wait_s",
                    f"{wait_text!r} is not a whole number of seconds 0..{MAX_WAIT_S}",
                    f"wait at most {MAX_WAIT_S} s, then ask again",
                )
            )
        else:
            wait_s = given
    until_text = request.query.get("until", "changed")
    if until_text not in UNTIL:
        problems.append(
            FieldProblem(
                "until", f"unknown condition {until_text!r}", f"use one of {', '.join(UNTIL)}"
            )
        )
    if problems:
        return refuse(request, 422, "invalid_query", "the query is invalid", problems)
    op = await _own_operation(request)
    if op is None:
        return _not_found(request)
    until = cast(Until, until_text)  # one of UNTIL, checked above
    return answer(
        request, await waited(request.app[STORE_KEY], op, wait_s, until, request.app[STOPPING_KEY])
    )


async def waited(
    store: Store,
    op: Operation,
    wait_s: int,
    until: Until,
    stopping: asyncio.Event | None = None,
) -> OperationView:
    """The view once it is what `until` asks, or as it stands after `wait_s` seconds (or as
    the server begins to stop)."""
    view = await op_view(store, op)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    stale = False  # read since the view was made (the card's delivery moves on its own)
    while not reached(view, until) and loop.time() < deadline:
        if await pause(stopping, min(WAIT_POLL_S, max(0.0, deadline - loop.time()))):
            break
        fresh = await store.get(op.id)
        if fresh is None:
            continue
        moved, op, stale = fresh.version != op.version, fresh, True
        if moved:  # the projection (with its outcomes) is read again only when it moved
            view, stale = await op_view(store, op), False
            if until == "changed":
                break
    return await op_view(store, op) if stale else view


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
        if (given := whole_number(limit_text, 1, MAX_PAGE_SIZE)) is None:
            problems.append(
                FieldProblem(
                    "limit",
                    f"{limit_text!r} is not a whole number 1..{MAX_PAGE_SIZE}",
                    f"send ASCII digits, at most {MAX_PAGE_SIZE}",
                )
            )
        else:
            limit = given
    if problems:
        return refuse(request, 422, "invalid_query", "the query is invalid", problems)
    try:
        page = await request.app[STORE_KEY].list_operations(
            state=state,
            limit=limit,
            cursor=request.query.get("cursor") or None,
            proposer=_proposer(request).name,
        )
    except InvalidCursor as error:
        return refuse(
            request,
            422,
            "invalid_query",
            str(error),
            [FieldProblem("cursor", str(error), "start over without it")],
        )
    views = await op_views(request.app[STORE_KEY], page.items)
    return web.json_response(
        {
            "items": [answered(view, request.app[CONFIG_KEY].settings) for view in views],
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
        return refuse(
            request,
            409,
            "not_cancellable",
            # the state in the words `list` and `show` use ("concluded", not its enum name)
            f"the operation is {state_words(error.current, 'en')}; only unclaimed operations "
            "can be cancelled",
        )
    return answer(request, await op_view(request.app[STORE_KEY], op))


async def healthz(_request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    status, body = await request.app[HEALTH_KEY].report()
    return web.json_response(body, status=status)


async def metrics(request: web.Request) -> web.Response:
    body = await metrics_text(request.app[HEALTH_KEY])
    return web.Response(body=body, content_type="text/plain", charset="utf-8")


# How the bot's AppRunner serves the app: no access log; aiohttp's own refusals (requests it
# cannot parse) logged as one line each.
RUNNER_OPTIONS: dict[str, Any] = {"access_log": None, "logger": wire_log}


async def _stopping(app: web.Application) -> None:
    app[STOPPING_KEY].set()  # before the server waits for the handlers still running


async def _summarizing(app: web.Application) -> AsyncIterator[None]:
    """The store's summary for /readyz and /metrics: read once before the app serves, then
    refreshed in the background while it does."""
    async with app[HEALTH_KEY].summary.running():
        yield


async def _recovering_web_decisions(app: web.Application) -> AsyncIterator[None]:
    """While the API serves: answer the web posts a previous run left unanswered."""
    store = app[STORE_KEY]
    recovery = WebRecovery(store, app[HEALTH_KEY].decisions)
    task = asyncio.create_task(recovery.run(store.clock()))
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def create_app(
    config: Config,
    store: Store,
    *,
    health: Health | None = None,
    on_proposed: Callable[[], None] = lambda: None,
    on_claimed: Callable[[], None] = lambda: None,
    capabilities: CapabilityReaders | None = None,
    prechecks: PrecheckReaders | None = None,
) -> web.Application:
    http = config.settings.http
    app = web.Application(
        middlewares=MIDDLEWARES,
        client_max_size=http.max_body_bytes,
    )
    app[CONFIG_KEY] = config
    app[STORE_KEY] = store
    app[AUTH_KEY] = ProposerAuth(config.proposers)
    app[LIMITER_KEY] = RateLimiter(http.proposer_rate_per_s, http.proposer_burst)
    app[PEER_LIMITER_KEY] = RateLimiter(http.unauthenticated_rate_per_s, http.unauthenticated_burst)
    web_settings = config.settings.web
    # the name browsers are sent back to after sign-in is one the dashboard answers to
    public = [URL(web_settings.public_url).host or ""] if web_settings.public_url else []
    app[HOSTS_KEY] = allowed_names([*http.allowed_hosts, *public], http.host)
    app[HEALTH_KEY] = health or Health(config, store, None, None)
    app.cleanup_ctx.append(_summarizing)
    app[ON_PROPOSED_KEY] = on_proposed
    app[CAPABILITIES_KEY] = capabilities or {}
    app[PRECHECKS_KEY] = prechecks or {}
    app[STOPPING_KEY] = asyncio.Event()
    app.on_shutdown.append(_stopping)
    app.router.add_post("/api/v1/operations", propose)
    app.router.add_post("/api/v1/operations/check", check)
    app.router.add_get("/api/v1/operations", list_operations)
    app.router.add_get(f"/api/v1/operations/{{id:{OPERATION_ID}}}", get_operation)
    app.router.add_post(
        f"/api/v1/operations/{{id:{OPERATION_ID}}}/cancel", cancel_operation, name=CANCEL_ROUTE
    )
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    signin = SignIn(config, store) if web_settings.sign_in else None
    if signin is not None:
        signin.routes(app)  # before the dashboard's, whose catch-all would take /ops/auth/...
    # Confirm and Reject on /ops/{id}: the card worker patches the card (on_proposed is its
    # kick), the executor runs a claim; counted with the card's decisions (/metrics)
    decisions = (
        WebDecisions(
            config,
            store,
            signin,
            app[HEALTH_KEY].decisions,
            on_card_due=on_proposed,
            on_claimed=on_claimed,
        )
        if signin is not None
        else None
    )
    if decisions is not None:
        decisions.routes(app)
        app.cleanup_ctx.append(_recovering_web_decisions)
    delegations = WebDelegations(config, store, signin) if signin is not None else None
    if delegations is not None:
        delegations.routes(app)
    Dashboard(
        store,
        config.dashboard_token.get_secret_value() or None,
        trust_loopback_proxy=http.trust_loopback_proxy,
        people=config.settings.people,
        tz=zone(config.settings.cards.timezone),  # the cards' zone: one on every surface
        lark_mode=config.settings.lark.mode,
        signin=signin,
        decisions=decisions,
        delegations=delegations,
    ).routes(app)
    return app
