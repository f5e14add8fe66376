"""Sign in with Lark on the dashboard: Lark's OAuth 2 authorization-code flow for web apps.

GET /ops/auth/sign-in sends the browser to Lark's authorize page with a fresh `state` and a
PKCE S256 challenge; the state is kept in the store (hashed, with its verifier, taken once,
10 minutes) and in a cookie of this browser, so a callback link made in someone else's
browser signs nobody in here (login CSRF). GET /ops/auth/callback checks both, exchanges the
code at Lark's v2 token endpoint (Authlib builds the authorize URL and the PKCE challenge; the
token request is JSON as Lark documents it, over the bot's own Lark HTTP client, see `_exchange`), reads
who signed in with the SDK's `authen.v1.user_info.get` request (sent by
bot/lark/transport.py with the user's token), and opens a server-side session
(store/sessions/web_sessions.py) in an HttpOnly, SameSite=Lax cookie on /ops. The user token is used
once and dropped: the session is ours, Lark's token is not kept.

Sign-in starts are rate-limited per client address and per signed-in person (each writes a
state row; bot/api/web_limits.py): past the limit a 429 page with Retry-After, nothing written.

POST /ops/auth/sign-out ends the session; it needs the session's CSRF token (a body that is no
readable form is a 400). Whether a session may read is the dashboard's question
(`Dashboard._access`): its tenant must be one of [lark] tenant_keys. Tokens, codes and the
cookie never reach a log line or a page.

A sign-in returns to the page it was started from: `?next=` (a path under /ops only,
bot/api/web_rules.py `return_path`) is kept in an HttpOnly cookie bound to this sign-in's
state (a digest of it), and checked again at the callback; anything else lands on /ops.
Every refusal is an error page with the ways on: sign in again, the operation, /ops.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

from aiohttp import web
from authlib.oauth2.rfc6749.parameters import (  # type: ignore[import-untyped]
    prepare_grant_uri,
)
from authlib.oauth2.rfc7636 import create_s256_code_challenge  # type: ignore[import-untyped]
from httpx import HTTPError
from lark_oapi.api.authen.v1 import (  # type: ignore[import-untyped]
    GetUserInfoRequest,
    GetUserInfoResponse,
)
from lark_oapi.core.model import RequestOption  # type: ignore[import-untyped]

from bot.api.dashboard_words import label
from bot.api.errors import TO_OPS, Step, html_error, request_lang
from bot.api.form_body import UnreadableForm, form_fields
from bot.api.hosts import forwarded_https
from bot.api.web_limits import SIGN_IN_STARTS, WebLimits
from bot.api.web_rules import return_path
from bot.config import Config
from bot.lark.transport import LarkTransport
from store import SIGN_IN_TTL_S, Store, WebSession, WebSessions

log = logging.getLogger("countersign.api")

SESSION_COOKIE = "countersign_session"
STATE_COOKIE = "countersign_sign_in"
RETURN_COOKIE = "countersign_return"  # the page a sign-in returns to, bound to its state
OPERATION_PAGE = re.compile(r"^/ops/[0-9A-HJKMNP-TV-Z]{26}(?:\?|$)")  # a ULID's page
SIGN_IN_PATH = "/ops/auth/sign-in"
CALLBACK_PATH = "/ops/auth/callback"
SIGN_OUT_PATH = "/ops/auth/sign-out"
TOKEN_PATH = "/open-apis/authen/v2/oauth/token"
TIMEOUT_S = 10.0
NAME_MAX = 200


@dataclass(frozen=True)
class Viewer:
    """Who the page is for: a signed-in person (and whether their tenant may read)."""

    name: str
    open_id: str
    tenant_key: str
    csrf_token: str
    allowed: bool
    signed_in_at: datetime  # the store's clock: re-authentication asks how long ago


class SignInFailed(Exception):
    """Lark refused a step, or answered what we cannot read; the message is safe to show."""


class SignIn:
    def __init__(self, config: Config, store: Store) -> None:
        settings = config.settings
        self.web = settings.web
        self.app_id = settings.lark.app_id
        self.app_secret = config.lark.app_secret
        self.tenant_keys = frozenset(settings.lark.tenant_keys)
        self.token_url = settings.lark.base_url.rstrip("/") + TOKEN_PATH
        self.sessions = WebSessions(
            store, idle_s=self.web.session_idle_s, max_s=self.web.session_max_s
        )
        # user_info through the project's one Lark transport: the SDK's request and parsing
        self.lark = LarkTransport(settings.lark.base_url, timeout_s=TIMEOUT_S)
        self.limits = WebLimits(SIGN_IN_STARTS)

    def routes(self, app: web.Application) -> None:
        app.router.add_get(SIGN_IN_PATH, self.sign_in)
        app.router.add_get(CALLBACK_PATH, self.callback)
        app.router.add_post(SIGN_OUT_PATH, self.sign_out)
        app.on_cleanup.append(self._close)

    async def _close(self, _app: web.Application) -> None:
        await self.lark.close()

    async def viewer(self, request: web.Request, *, touch: bool = True) -> Viewer | None:
        """The signed-in person of this request, or None (no cookie, or its session ended)."""
        token = request.cookies.get(SESSION_COOKIE, "")
        session = await self.sessions.find(token, touch=touch) if token else None
        if session is None:
            return None
        allowed = session.tenant_key in self.tenant_keys
        return Viewer(
            session.name,
            session.open_id,
            session.tenant_key,
            session.csrf_token,
            allowed,
            session.signed_in_at,
        )

    def _secure(self, request: web.Request) -> bool:
        public = (self.web.public_url or "").startswith("https://")
        return public or request.secure or forwarded_https(request.headers)

    # -- the flow ---------------------------------------------------------------------------

    async def sign_in(self, request: web.Request) -> web.Response:
        if (throttled := self.limits.by_address(request)) is not None:
            return throttled
        viewer = await self.viewer(request, touch=False)  # signing in again (re-authentication)
        if (
            viewer is not None
            and (throttled := self.limits.by_person(request, viewer.open_id)) is not None
        ):
            return throttled
        state = secrets.token_urlsafe(32)
        verifier = secrets.token_urlsafe(48)  # 64 characters of [A-Za-z0-9_-] (RFC 7636)
        await self.sessions.begin_sign_in(state, verifier)
        url = prepare_grant_uri(
            self.web.lark_authorize_url,
            client_id=self.app_id,
            response_type="code",
            redirect_uri=self.web.redirect_uri,
            state=state,
            code_challenge=create_s256_code_challenge(verifier),
            code_challenge_method="S256",
        )
        response = web.HTTPFound(url)
        back = return_path(request.query.get("next", ""))
        if back is not None:  # the page "Sign in" was pressed on: the callback comes back to it
            response.set_cookie(
                RETURN_COOKIE,
                f"{_bound(state)}:{back}",
                path="/ops/auth",
                max_age=int(SIGN_IN_TTL_S),
                secure=self._secure(request),
                httponly=True,
                samesite="Lax",
            )
        else:  # an older sign-in's page is not this one's
            response.del_cookie(RETURN_COOKIE, path="/ops/auth")
        response.set_cookie(
            STATE_COOKIE,
            state,
            path="/ops/auth",
            max_age=int(SIGN_IN_TTL_S),
            secure=self._secure(request),
            httponly=True,
            samesite="Lax",  # it must come back on Lark's redirect, a cross-site navigation
        )
        raise response

    async def callback(self, request: web.Request) -> web.Response:
        state = request.query.get("state", "")
        kept = request.cookies.get(STATE_COOKIE, "")
        if not state or not hmac.compare_digest(state.encode(), kept.encode()):
            return self._refused(request, 400, "signin.not_started")
        # taken first, whatever happens next: a state is never used twice
        verifier = await self.sessions.take_sign_in(state)
        if verifier is None:
            return self._refused(request, 400, "signin.expired")
        if request.query.get("error"):
            return self._refused(request, 403, "signin.cancelled")
        code = request.query.get("code", "")
        if not code:
            return self._refused(request, 400, "signin.no_code")
        try:
            user = await self._user(await self._exchange(code, verifier))
        except SignInFailed as error:
            return self._refused(request, 502, "signin.lark", why=str(error))
        token, session = await self.sessions.open(
            user["open_id"], user["tenant_key"], user["name"][:NAME_MAX]
        )
        log.info("signed in: %s of tenant %s", session.open_id, session.tenant_key)
        # signing in again (re-authentication) ends this browser's older session
        if older := request.cookies.get(SESSION_COOKIE, ""):
            await self.sessions.revoke(older)
        response = web.HTTPFound(self._return_to(request, state) or "/ops")
        response.del_cookie(STATE_COOKIE, path="/ops/auth")
        response.del_cookie(RETURN_COOKIE, path="/ops/auth")
        self._keep(request, response, token)
        raise response

    def _keep(self, request: web.Request, response: web.StreamResponse, token: str) -> None:
        response.set_cookie(
            SESSION_COOKIE,
            token,
            path="/ops",
            max_age=self.web.session_max_s,
            secure=self._secure(request),
            httponly=True,
            samesite="Lax",
        )

    async def _exchange(self, code: str, verifier: str) -> str:
        """The user access token for `code`, from Lark's v2 token endpoint.

        Not Authlib's AsyncOAuth2Client: from Authlib 1.9 its httpx integration is deprecated
        (it wants `httpx2`), and it would open an HTTP client of its own per sign-in; and Lark
        documents this endpoint's body as JSON (`Content-Type: application/json;
        charset=utf-8`), not RFC 6749's form encoding, with client_id and client_secret in it.
        What is ours is that body, the POST over the bot's one Lark HTTP client, and reading
        Lark's answer, whose refusals are `{code, error, error_description}` with HTTP 400
        and whose success says `code: 0`."""
        body = {
            "grant_type": "authorization_code",
            "client_id": self.app_id,
            "client_secret": self.app_secret.get_secret_value(),
            "code": code,
            "redirect_uri": self.web.redirect_uri,
            "code_verifier": verifier,
        }
        try:
            response = await self.lark.client.post(
                self.token_url,
                content=json.dumps(body).encode(),
                headers={
                    "Content-Type": "application/json; charset=utf-8",
                    "Accept": "application/json",
                },
            )
            answer = response.json()
        except (HTTPError, ValueError) as error:
            log.info("sign-in: token endpoint unreadable: %s", type(error).__name__)
            raise SignInFailed("Lark's token endpoint did not answer") from None
        if not isinstance(answer, dict):
            raise SignInFailed("Lark's token endpoint did not answer")
        access = answer.get("access_token")
        if answer.get("code", 0) != 0 or "error" in answer or not isinstance(access, str):
            # the error type and Lark's code only: the description may quote what was sent
            error_type = str(answer.get("error") or "refused")[:40]
            log.info("sign-in: Lark refused the code: %s (%s)", error_type, answer.get("code"))
            raise SignInFailed(f"Lark refused the sign-in ({error_type})")
        return access

    async def _user(self, access_token: str) -> dict[str, str]:
        option = RequestOption.builder().user_access_token(access_token).build()
        request = GetUserInfoRequest.builder().build()
        try:
            answer = await self.lark.call(request, option, GetUserInfoResponse)
        except (HTTPError, ValueError) as error:
            log.info("sign-in: user_info unreachable: %s", type(error).__name__)
            raise SignInFailed("Lark's user info did not answer") from None
        data = answer.data
        if not answer.success() or data is None or not data.open_id or not data.tenant_key:
            log.info("sign-in: user_info refused (code %s)", answer.code)
            raise SignInFailed("Lark did not say who signed in")
        return {"open_id": data.open_id, "tenant_key": data.tenant_key, "name": data.name or ""}

    async def sign_out(self, request: web.Request) -> web.Response:
        token = request.cookies.get(SESSION_COOKIE, "")
        session = await self.sessions.find(token, touch=False) if token else None
        try:
            form = await form_fields(request)
        except UnreadableForm as unreadable:
            said = unreadable.said(request_lang(request))
            return self._refused(request, 400, "signout.unreadable", why=said)
        given = form.get("csrf")
        if session is not None:
            if given is None or not _same(given, session):
                return self._refused(request, 403, "signout.foreign")
            await self.sessions.revoke(token)
            log.info("signed out: %s", session.open_id)
        response = web.HTTPSeeOther("/ops")
        response.del_cookie(SESSION_COOKIE, path="/ops")
        raise response

    def _return_to(self, request: web.Request, state: str) -> str | None:
        """The page this sign-in was started from, if its cookie is this sign-in's."""
        bound, _, back = request.cookies.get(RETURN_COOKIE, "").partition(":")
        if not state or not hmac.compare_digest(bound.encode(), _bound(state).encode()):
            return None
        return return_path(back)

    def _refused(self, request: web.Request, status: int, key: str, why: str = "") -> web.Response:
        """An error page saying what failed and the ways on: sign in again (back to the page
        this sign-in was started from, when known), or the dashboard."""
        log.info("refused %s %r: %d sign-in", request.method, request.path, status)
        lang = request_lang(request)
        # the page to go back to, whichever sign-in set it: only a link is made of it
        back = return_path(request.cookies.get(RETURN_COOKIE, "").partition(":")[2]) or ""
        steps = [Step("next.sign_in", sign_in_link(back)), TO_OPS]
        if OPERATION_PAGE.match(back):
            steps.insert(1, Step("next.operation", back))
        return html_error(status, label(key, lang, why=why), lang=lang, steps=steps)


def sign_in_link(back: str | None = None) -> str:
    """The sign-in link of page `back`: the sign-in comes back to it (when it may)."""
    kept = return_path(back or "")
    return f"{SIGN_IN_PATH}?{urlencode({'next': kept})}" if kept else SIGN_IN_PATH


def _bound(state: str) -> str:
    """What ties a return cookie to its sign-in: a digest of the state (never the state)."""
    return hashlib.sha256(state.encode()).hexdigest()[:16]


def _same(given: str, session: WebSession) -> bool:
    return hmac.compare_digest(given.encode(), session.csrf_token.encode())
