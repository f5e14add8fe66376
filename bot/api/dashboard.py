"""`/ops`: the read-only operator dashboard, server-rendered from the one projection.

Server-rendered HTML (no build step, no client framework; `bot/api/dashboard_html.py`):
every page is the projection the card and the API show, in the card's words, plus the
operation's records. `/ops` is "Needs attention" (counts per group, the groups, recent
activity; `store/reads/attention.py` reads them), `/ops/all` the list with state and outcome filters
and a search, `/ops/{id}` one operation; `/` redirects to `/ops`, and any other path under
`/ops` is an HTML 404 page. Live refresh is one long poll per open page (`/ops/changes`,
answered when anything changes or after 25 s), not a polling storm.
Only GET routes exist here: browsing can never change state (sign-in and sign-out, under
/ops/auth, are bot/api/signin.py's; a decision, POST /ops/{id}/decide, bot/api/web_decide.py's,
whose form this page renders for a signed-in operator). Access: a person signed in with Lark whose tenant is one
of [lark] tenant_keys; else, as before, loopback clients, or the configured dashboard token
(`?token=` once; it is then kept in an HttpOnly, SameSite=Strict cookie for /ops, Secure when
the page is served over https). A request that came through a
proxy (X-Forwarded-For, Forwarded, ...) is not a loopback client, even from 127.0.0.1, unless
`[http] trust_loopback_proxy` says the proxy on this host may be trusted: behind a same-host
reverse proxy every internet client would otherwise look local.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Mapping
from datetime import UTC, tzinfo
from ipaddress import ip_address

from aiohttp import web
from yarl import URL

from bot.api.dashboard_delegations import delegation_rows, grant_form
from bot.api.dashboard_html import (
    Chrome,
    Who,
    attention_html,
    delegations_html,
    detail_html,
    list_html,
    not_found_html,
    outcome_choices,
    policy_html,
    refused_html,
)
from bot.api.dashboard_policy import POLICY_PATH, FiledUnder
from bot.api.dashboard_words import Now, label
from bot.api.errors import refuse
from bot.api.hosts import forwarded_https, proxied
from bot.api.keys import STOPPING_KEY, pause
from bot.api.signin import SignIn
from bot.api.unposted import all_unposted
from bot.api.web_decide import WebDecisions
from bot.api.web_delegation import DELEGATIONS_PATH, WebDelegations, grant_choices
from bot.api.web_rules import return_path
from cards.strings import Lang
from kernel.problems import FieldProblem
from store import (
    AWAITING,
    SEARCH_MAX_CHARS,
    CardLedger,
    DelegationLedger,
    DeliveryLedger,
    ExecutionLedger,
    InvalidCursor,
    Operation,
    PolicyLedger,
    State,
    Store,
    attention_groups,
    change_mark,
    recent,
    search,
    views,
)

log = logging.getLogger("countersign.api")

# the shape of an operation id (a ULID, with room); anything else is no route: a 404
OPERATION_ID = "[0-9A-Za-z_-]{1,64}"
LONG_POLL_S = 25.0
GROUP_ROWS = 50  # per "Needs attention" group; its count says how many there are
RECENT_ROWS = 20
LIST_ROWS = 50
# the list's query parameters: on /ops they mean the list (/ops/all)
LIST_PARAMS = ("state", "outcome", "q", "cursor")
POLL_STEP_S = 0.5
COOKIE = "countersign_dashboard"
POLICY_ROWS = 100  # versions on the history page (each is a restart with another config)


async def filed_under(store: Store, op: Operation) -> FiledUnder:
    """The policy version `op` was filed under, and the versions that changed its audience's
    policy since (what a refused click's `policy_changed` points at)."""
    ledger = PolicyLedger(store)
    audience = op.envelope.audience.name
    version = await ledger.filed_under(audience, op.envelope.approval.policy, op.created_at)
    if version is None:
        return FiledUnder(audience, None)
    return FiledUnder(audience, version, await ledger.changed_since(audience, version.seq))


def lang_of(request: web.Request) -> Lang:
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


def moved(request: web.Request, path: str) -> URL:
    """The same request on another path, its query kept (a language, a filter)."""
    return request.rel_url.with_path(path).with_query(request.rel_url.query)


def search_problem(text: str, lang: Lang = "en") -> FieldProblem | None:
    """A search text the store cannot be asked about: too long, or characters no id or term
    holds (a NUL PostgreSQL refuses, a lone surrogate no driver encodes)."""
    if len(text) > SEARCH_MAX_CHARS:
        too_long = label("search.too_long", lang, max=str(SEARCH_MAX_CHARS))
        return FieldProblem("q", too_long, label("search.too_long.fix", lang))
    if any(ord(ch) < 32 or 0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        return FieldProblem("q", label("search.control", lang), label("search.control.fix", lang))
    return None


class Dashboard:
    def __init__(
        self,
        store: Store,
        token: str | None,
        *,
        trust_loopback_proxy: bool = False,
        people: Mapping[str, str] | None = None,
        signin: SignIn | None = None,
        decisions: WebDecisions | None = None,
        delegations: WebDelegations | None = None,
        tz: tzinfo = UTC,
        lark_mode: str = "off",
    ):
        self.store = store
        self.lark_mode = lark_mode  # "off": cards are never posted here (bot/api/unposted.py)
        self.tz = tz  # the display zone ([cards] timezone): the card's times, the same here
        self.signin = signin
        self.decisions = decisions  # Confirm and Reject on /ops/{id} (bot/api/web_decide.py)
        self.delegations = delegations  # grants and ends on /ops/delegations, signed in
        self.token = token
        self.trust_loopback_proxy = trust_loopback_proxy
        # open id -> display name ([people]); anyone not listed is shown by their id
        self.people: Mapping[str, str] = dict(people or {})

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/", self.home)
        app.router.add_get("/ops", self.attention)
        app.router.add_get("/ops/all", self.list)
        app.router.add_get("/ops/changes", self.changes)
        app.router.add_get(POLICY_PATH, self.policy)
        app.router.add_get(DELEGATIONS_PATH, self.delegations_page)
        app.router.add_get(f"/ops/{{id:{OPERATION_ID}}}", self.detail)
        # any other page under /ops: the dashboard's own 404 page, not the API's JSON
        app.router.add_get("/ops/{tail:.+}", self.no_page)

    async def _access(
        self, request: web.Request, *, touch: bool = True
    ) -> tuple[web.Response | None, Who]:
        """A refusal, or who the page is for. A signed-in session decides by its tenant (one of
        another tenant is refused whatever else the request shows: it asked as that person);
        without one, loopback or the dashboard token, as before sign-in existed."""
        sign_in = self.signin is not None
        viewer = await self.signin.viewer(request, touch=touch) if self.signin else None
        who = Who(viewer, sign_in)
        if viewer is not None and not viewer.allowed:
            log.info("refused %s %r: 403 tenant not allowed", request.method, request.path)
            return self._refused_page(request, who), who
        if viewer is None and not allowed(request, self.token, self.trust_loopback_proxy):
            if sign_in:
                return self._refused_page(request, who), who
            return refuse(
                request, 403, "forbidden", "the dashboard answers loopback clients, or ?token="
            ), who
        return None, who

    def _refused_page(self, request: web.Request, who: Who) -> web.Response:
        # signing in from here comes back here: a page of ours (else /ops), never what was typed
        here = return_path(request.path) or "/ops"
        html = refused_html(Chrome(lang_of(request), "-", here, who=who))
        return web.Response(text=html, content_type="text/html", status=403)

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

    def _page(self, request: web.Request, html: str, status: int = 200) -> web.Response:
        response = web.Response(text=html, content_type="text/html", status=status)
        return self._keep_token(request, response)

    async def home(self, request: web.Request) -> web.Response:
        raise web.HTTPFound(moved(request, "/ops"))

    async def attention(self, request: web.Request) -> web.Response:
        """Needs attention: counts per group, each group, then recent activity."""
        refusal, who = await self._access(request)
        if refusal:
            return refusal
        if any(name in request.query for name in LIST_PARAMS):
            # the list's filters on /ops (links from before /ops/all): the list itself
            raise web.HTTPFound(moved(request, "/ops/all"))
        mark = await change_mark(self.store)  # before the reads: a change after them moves it
        groups = await attention_groups(self.store, limit=GROUP_ROWS)
        latest = await recent(self.store, limit=RECENT_ROWS)
        shown = {op.id: op for op in [*(op for g in groups for op in g.operations), *latest]}
        by_id = {
            view.id: view
            for view in all_unposted(await views(self.store, list(shown.values())), self.lark_mode)
        }
        # a page with operations counting down to their expiry keeps its "in N min" true
        ticking = any(g.count for g in groups if g.key == AWAITING)
        html = attention_html(
            [(g.key, g.count, [by_id[op.id] for op in g.operations]) for g in groups],
            [by_id[op.id] for op in latest],
            Chrome(lang_of(request), mark, "/ops", ticking=ticking, who=who),
            self.people,
            self.store.clock(),
            self.tz,
        )
        return self._page(request, html)

    async def list(self, request: web.Request) -> web.Response:
        """Every operation, newest first, by state, newest outcome and a search text."""
        refusal, who = await self._access(request)
        if refusal:
            return refusal
        mark = await change_mark(self.store)
        state_text = request.query.get("state", "")
        state = State(state_text) if state_text in {s.value for s in State} else None
        outcome = request.query.get("outcome", "")
        outcome = outcome if outcome in outcome_choices() else ""
        q = request.query.get("q", "").strip()
        if problem := search_problem(q, lang_of(request)):
            said = label("search.refused", lang_of(request))
            return refuse(request, 400, "invalid_query", said, [problem])
        try:
            page = await search(
                self.store,
                state=state,
                outcome=outcome or None,
                text=q,
                limit=LIST_ROWS,
                cursor=request.query.get("cursor") or None,
            )
        except InvalidCursor as error:
            return refuse(
                request,
                400,
                "invalid_query",
                "this page link is not one the dashboard made",
                [FieldProblem("cursor", str(error), "start over from /ops/all")],
            )
        filters = {"state": state.value if state else "", "outcome": outcome, "q": q}
        html = list_html(
            all_unposted(await views(self.store, list(page.items)), self.lark_mode),
            filters,
            page.next_cursor if page.has_more else None,
            Chrome(lang_of(request), mark, "/ops/all", filters, who=who),
            self.people,
            self.store.clock(),
            page.searched_to,
            self.tz,
        )
        return self._page(request, html)

    async def detail(self, request: web.Request) -> web.Response:
        refusal, who = await self._access(request)
        if refusal:
            return refusal
        lang = lang_of(request)
        # Read before the operation: a change made while this page is built then moves the
        # mark past the page's, and the page's long poll reloads it (read after, the page
        # could show the old state under the new mark and never reload).
        mark = await change_mark(self.store)
        operation_id = request.match_info["id"]
        op = await self.store.get(operation_id)
        if op is None:
            message = label("not_found.operation", lang, id=operation_id)
            return self._not_found(request, message, mark, who)
        [view] = all_unposted(await views(self.store, [op]), self.lark_mode)
        records = {
            "confirmations": await self.store.confirmations(op.id),
            "attempt": await ExecutionLedger(self.store).attempt(op.id),
            "card": await CardLedger(self.store).history(op.id),
            "deliveries": await DeliveryLedger(self.store).find(operation_id=op.id),
            "policy": await filed_under(self.store, op),
        }
        viewer = who.viewer
        panel = flash = None
        if self.decisions is not None:
            panel = await self.decisions.panel(op, viewer, lang)
            form_key = request.query.get("form", "")
            flash = await self.decisions.flash(op.id, form_key, viewer, lang)
        html = detail_html(
            view,
            records,
            lang,
            mark,
            people=self.people,
            now=self.store.clock(),
            tz=self.tz,
            who=who,
            decide=panel.form if panel else None,
            flash=flash,
            panel=panel,
        )
        return self._page(request, html)

    async def policy(self, request: web.Request) -> web.Response:
        refusal, who = await self._access(request)
        if refusal:
            return refusal
        mark = await change_mark(self.store)
        versions = await PolicyLedger(self.store).history(POLICY_ROWS)
        chrome = Chrome(lang_of(request), mark, POLICY_PATH, who=who)
        return self._page(request, policy_html(versions, chrome, self.store.clock(), self.tz))

    async def delegations_page(self, request: web.Request) -> web.Response:
        refusal, who = await self._access(request)
        if refusal:
            return refusal
        lang = lang_of(request)
        mark = await change_mark(self.store)
        viewer = who.viewer
        now = self.store.clock()
        in_force = await DelegationLedger(self.store).listed()
        shown = Now(now, self.tz)
        rows = delegation_rows(
            in_force, viewer.open_id if viewer else None, self.people, shown, lang
        )
        grant = None
        if viewer is not None and viewer.allowed and self.delegations is not None:
            choices = grant_choices(self.delegations.settings, viewer.open_id)
            grant = grant_form(choices, viewer.open_id, self.people)
        chrome = Chrome(lang, mark, DELEGATIONS_PATH, who=who)
        done = request.query.get("changed")
        return self._page(request, delegations_html(rows, grant, chrome, done))

    async def no_page(self, request: web.Request) -> web.Response:
        refusal, who = await self._access(request)
        if refusal:
            return refusal
        lang = lang_of(request)
        # the path itself is not shown: it may hold bytes no page should echo
        return self._not_found(request, label("not_found.page", lang), "-", who)

    def _not_found(self, request: web.Request, message: str, mark: str, who: Who) -> web.Response:
        log.info("dashboard: no page %r", request.path)
        html = not_found_html(message, Chrome(lang_of(request), mark, "/ops", who=who))
        return self._page(request, html, status=404)

    async def changes(self, request: web.Request) -> web.Response:
        """Long poll: answers once anything changed since `since`, or after 25 s. It does not
        count as use of a session: a tab left open must still idle out."""
        refusal, _who = await self._access(request, touch=False)
        if refusal:
            return refusal
        since = request.query.get("since", "")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LONG_POLL_S
        while loop.time() < deadline:
            if await change_mark(self.store) != since:
                return web.json_response({"changed": True})
            # a page that reloaded or closed has gone: stop reading the store for it
            if request.transport is None or request.transport.is_closing():
                break
            if await pause(request.app[STOPPING_KEY], POLL_STEP_S):
                break  # the server is stopping: the page asks again, of the next run
        return web.json_response({"changed": False})
