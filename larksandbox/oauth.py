"""Lark's web sign-in (OAuth 2 authorization code, the current flow): the authorize page, the
token endpoint and user info, with Lark's paths, bodies and error codes.

* `GET /open-apis/authen/v1/authorize` (on Lark: accounts.feishu.cn) shows a consent page where
  one picks any sandbox user; its form POSTs back here, and the browser is sent (302) to the
  app's registered redirect URI with `code` and `state`, or `error=access_denied` and `state`.
* `POST /open-apis/authen/v2/oauth/token`: grant_type authorization_code or refresh_token.
* `GET /open-apis/authen/v1/user_info` with `Authorization: Bearer <user_access_token>`.

Which parts follow Lark's documents and which are the sandbox's choices: larksandbox/README.md.
The token endpoint is in larksandbox/oauth_token.py, the pages in larksandbox/oauth_page.py and
the grants themselves in larksandbox/oauth_grants.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit, urlunsplit

from aiohttp import web

from larksandbox import oauth_page, oauth_token
from larksandbox.entities import App
from larksandbox.oauth_grants import PKCE_METHODS, joined_scope, split_scope
from larksandbox.openapi import STATE_KEY, LarkError, ok
from larksandbox.state import SandboxState

USER_INFO_PATH = "/open-apis/authen/v1/user_info"
# user_info's documented answers to a bad token: HTTP 200, as its error table says.
USER_TOKEN_INVALID = (20005, "The user access token passed is invalid. Please check the value")
USER_NOT_EXIST = (20008, "User not exist")


class PageRefused(Exception):
    """An authorize request the sandbox answers with an error page, not a redirect."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _state(request: web.Request) -> SandboxState:
    return request.app[STATE_KEY]


# -- authorize ------------------------------------------------------------------------------


@dataclass
class Authorization:
    """An authorize request whose app, redirect URI and parameters passed the checks."""

    app: App
    redirect_uri: str
    params: dict[str, str]  # what the consent form sends back (state only when it was given)

    @property
    def state(self) -> str | None:
        return self.params.get("state")


def _checked(state: SandboxState, query: Mapping[str, str]) -> Authorization:
    # Until client_id and redirect_uri are known good, nothing may go to redirect_uri (an
    # open redirect); every refusal here is a page.
    client_id = query.get("client_id", "")
    if not client_id:
        raise PageRefused(20001, "client_id is missing.")
    app = state.apps.get(client_id)
    if app is None:
        raise PageRefused(20048, "The specified app does not exist.")
    redirect_uri = query.get("redirect_uri", "")
    if not redirect_uri:
        raise PageRefused(20001, "redirect_uri is missing.")
    if redirect_uri not in app.redirect_urls:
        raise PageRefused(20029, "redirect_uri is not one of the app's redirect URLs.")
    if query.get("response_type") != "code":
        raise PageRefused(20063, 'response_type must be "code".')
    params = {"client_id": client_id, "response_type": "code", "redirect_uri": redirect_uri}
    for name in ("scope", "state"):
        if name in query:
            params[name] = query[name]
    if query.get("code_challenge"):
        method = query.get("code_challenge_method") or "plain"  # Lark's documented default
        if method not in PKCE_METHODS:
            raise PageRefused(20063, "code_challenge_method must be S256 or plain.")
        params["code_challenge"] = query["code_challenge"]
        params["code_challenge_method"] = method
    return Authorization(app, redirect_uri, params)


def _redirect(uri: str, params: dict[str, str]) -> web.Response:
    """302 to `uri` with `params` added to its query; a fragment stays last, as Lark does."""
    parts = urlsplit(uri)
    query = urlencode(params)
    location = urlunsplit(parts._replace(query=f"{parts.query}&{query}" if parts.query else query))
    return web.Response(status=302, headers={"Location": location, "Cache-Control": "no-store"})


async def authorize_page(request: web.Request) -> web.Response:
    state = _state(request)
    try:
        checked = _checked(state, request.query)
    except PageRefused as refused:
        return oauth_page.error_page(refused.code, refused.message)
    return oauth_page.consent_page(checked.app, state.users.values(), checked.params)


async def authorize_decision(request: web.Request) -> web.Response:
    """The consent form: the fields are checked again, as anyone can post anything."""
    state = _state(request)
    form = {k: v for k, v in (await request.post()).items() if isinstance(v, str)}
    try:
        checked = _checked(state, form)
        decision = form.get("decision")
        if decision not in ("approve", "deny"):
            raise PageRefused(20063, "decision must be approve or deny.")
        user = state.users.get(form.get("user", ""))
        if decision == "approve" and user is None:
            raise PageRefused(20008, "The user does not exist.")
    except PageRefused as refused:
        return oauth_page.error_page(refused.code, refused.message)
    echo = {"state": checked.state} if checked.state is not None else {}
    if decision == "deny" or user is None:
        return _redirect(checked.redirect_uri, {"error": "access_denied", **echo})
    code = state.oauth.issue_code(
        checked.app.app_id,
        user.open_id,
        checked.redirect_uri,
        joined_scope(split_scope(checked.params.get("scope", ""))),
        state.now_s(),
        checked.params.get("code_challenge", ""),
        checked.params.get("code_challenge_method", ""),
    )
    state.publish({"type": "oauth"})  # saved with the state file
    return _redirect(checked.redirect_uri, {"code": code.code, **echo})


# -- user info ------------------------------------------------------------------------------


async def user_info(request: web.Request) -> web.Response:
    state = _state(request)
    header = request.headers.get("Authorization", "")
    presented = header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else ""
    if not presented:  # the gateway's answer, as for the other endpoints
        raise LarkError(
            99991661,
            "Missing access token for authorization. Please make a request with token attached.",
        )
    grant = state.oauth.user_token(presented, state.now_s())
    if grant is None:  # unknown, expired, or an app's token
        raise LarkError(*USER_TOKEN_INVALID, status=200)
    user = state.users.get(grant.open_id)
    if user is None:
        raise LarkError(*USER_NOT_EXIST, status=200)
    # No avatars, e-mail, mobile or employee number in the sandbox; user_id is given as if the
    # app had its field permission (contact:user.employee_id:readonly).
    return ok(
        {
            "name": user.name,
            "en_name": user.name,
            "avatar_url": "",
            "avatar_thumb": "",
            "avatar_middle": "",
            "avatar_big": "",
            "open_id": user.open_id,
            "union_id": user.union_id,
            "user_id": user.user_id,
            "tenant_key": user.tenant_key,
        }
    )


def add_routes(app: web.Application) -> None:
    app.router.add_get(oauth_page.AUTHORIZE_PATH, authorize_page)
    app.router.add_post(oauth_page.AUTHORIZE_PATH, authorize_decision)
    app.router.add_post(oauth_token.TOKEN_PATH, oauth_token.token)
    app.router.add_get(USER_INFO_PATH, user_info)
