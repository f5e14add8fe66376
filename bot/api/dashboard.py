"""`/ops`: the read-only operator dashboard, server-rendered from the one projection.

Server-rendered HTML (no build step, no client framework): every page is the projection the
card and the API show, plus the operation's records (confirmations and refusals, attempts,
outcomes, card deliveries, result deliveries). Live refresh is one long poll per open page
(`/ops/changes`, answered when anything changes or after 25 s), not a polling storm.
Only GET routes exist: browsing can never change state. Access: loopback clients, or the
configured dashboard token (`?token=` once; it is then kept in an HttpOnly, SameSite=Strict
cookie for /ops, Secure when the page is served over https). A request that came through a
proxy (X-Forwarded-For, Forwarded, ...) is not a loopback client, even from 127.0.0.1, unless
`[http] trust_loopback_proxy` says the proxy on this host may be trusted: behind a same-host
reverse proxy every internet client would otherwise look local.
"""

from __future__ import annotations

import asyncio
import hmac
from ipaddress import ip_address

from aiohttp import web
from sqlalchemy import func, select

from bot.api.dashboard_html import detail_html, list_html
from bot.api.errors import refuse
from bot.api.hosts import forwarded_https, proxied
from store.authority import Store
from store.cards import CardLedger
from store.deliveries import DeliveryLedger
from store.execution import ExecutionLedger
from store.execution_reads import views
from store.lifecycle import State
from store.models import OperationRow
from store.paging import InvalidCursor
from store.problems import FieldProblem

# the shape of an operation id (a ULID, with room); anything else is no route: a 404
OPERATION_ID = "[0-9A-Za-z_-]{1,64}"
LONG_POLL_S = 25.0
POLL_STEP_S = 0.5
COOKIE = "countersign_dashboard"


def lang_of(request: web.Request) -> str:
    asked = request.query.get("lang") or request.headers.get("Accept-Language") or ""
    return "zh" if asked.lower().startswith("zh") else "en"


def loopback_client(request: web.Request, trust_loopback_proxy: bool = False) -> bool:
    try:
        loopback = ip_address(request.remote or "").is_loopback
    except ValueError:
        return False
    return loopback and (trust_loopback_proxy or not proxied(request.headers))


def allowed(request: web.Request, token: str | None, trust_loopback_proxy: bool = False) -> bool:
    """With a token configured, every client shows it (a same-host proxy that adds no
    forwarding header makes the internet look like loopback); without one, only loopback
    clients may browse."""
    if not token:
        return loopback_client(request, trust_loopback_proxy)
    given = request.query.get("token") or request.cookies.get(COOKIE) or ""
    return hmac.compare_digest(given.encode(), token.encode())


async def change_mark(store: Store) -> str:
    """Moves whenever any operation changes (its updated_at), for the long poll."""
    async with store.read() as conn:
        newest, count = (
            await conn.execute(
                select(func.max(OperationRow.updated_at), func.count()).select_from(OperationRow)
            )
        ).one()
    return f"{newest.isoformat() if newest else '-'}/{count}"


class Dashboard:
    def __init__(self, store: Store, token: str | None, *, trust_loopback_proxy: bool = False):
        self.store = store
        self.token = token
        self.trust_loopback_proxy = trust_loopback_proxy

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/ops", self.list)
        app.router.add_get("/ops/changes", self.changes)
        app.router.add_get(f"/ops/{{id:{OPERATION_ID}}}", self.detail)

    def _refusal(self, request: web.Request) -> web.Response | None:
        if not allowed(request, self.token, self.trust_loopback_proxy):
            return refuse(
                request, 403, "forbidden", "the dashboard answers loopback clients, or ?token="
            )
        return None

    def _keep_token(self, request: web.Request, response: web.Response) -> web.Response:
        if request.query.get("token"):
            response.set_cookie(
                COOKIE,
                request.query["token"],
                path="/ops",
                secure=request.secure or forwarded_https(request.headers),
                httponly=True,
                samesite="Strict",
            )
        return response

    async def list(self, request: web.Request) -> web.Response:
        if refusal := self._refusal(request):
            return refusal
        lang = lang_of(request)
        mark = await change_mark(self.store)  # before the reads: a change after them moves it
        state_text = request.query.get("state")
        state = State(state_text) if state_text in {s.value for s in State} else None
        try:
            page = await self.store.list_operations(
                state=state, limit=50, cursor=request.query.get("cursor") or None
            )
        except InvalidCursor as error:
            return refuse(
                request,
                400,
                "invalid_query",
                "this page link is not one the dashboard made",
                [FieldProblem("cursor", str(error), "start over from /ops")],
            )
        items = await views(self.store, list(page.items))
        html = list_html(
            items,
            state.value if state else None,
            page.next_cursor if page.has_more else None,
            lang,
            mark,
        )
        return self._keep_token(request, web.Response(text=html, content_type="text/html"))

    async def detail(self, request: web.Request) -> web.Response:
        if refusal := self._refusal(request):
            return refusal
        lang = lang_of(request)
        # Read before the operation: a change made while this page is built then moves the
        # mark past the page's, and the page's long poll reloads it (read after, the page
        # could show the old state under the new mark and never reload).
        mark = await change_mark(self.store)
        op = await self.store.get(request.match_info["id"])
        if op is None:
            return refuse(request, 404, "not_found", f"no operation {request.match_info['id']!r}")
        [view] = await views(self.store, [op])
        records = {
            "confirmations": await self.store.confirmations(op.id),
            "attempt": await ExecutionLedger(self.store).attempt(op.id),
            "card": await CardLedger(self.store).history(op.id),
            "deliveries": await DeliveryLedger(self.store).find(operation_id=op.id),
        }
        html = detail_html(view, records, lang, mark)
        return self._keep_token(request, web.Response(text=html, content_type="text/html"))

    async def changes(self, request: web.Request) -> web.Response:
        """Long poll: answers once anything changed since `since`, or after 25 s."""
        if refusal := self._refusal(request):
            return refusal
        since = request.query.get("since", "")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LONG_POLL_S
        while loop.time() < deadline:
            if await change_mark(self.store) != since:
                return web.json_response({"changed": True})
            await asyncio.sleep(POLL_STEP_S)
        return web.json_response({"changed": False})
