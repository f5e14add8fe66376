"""Lark's token endpoint for the web sign-in, `POST /open-apis/authen/v2/oauth/token`: the
authorization_code and refresh_token grants, with Lark's documented error table.

The body is JSON as Lark documents it (form encoding is read too); the client authenticates with
client_id and client_secret in the body, or HTTP Basic, never both (20070). A refused request
leaves the code or refresh token as it was. larksandbox/README.md says what is Lark's and what
is the sandbox's choice.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from typing import Any
from urllib.parse import unquote_plus

from aiohttp import web

from larksandbox.entities import App
from larksandbox.oauth_grants import (
    REFRESH_TOKEN_TTL_S,
    USER_TOKEN_TTL_S,
    joined_scope,
    pkce_matches,
    split_scope,
)
from larksandbox.openapi import STATE_KEY
from larksandbox.state import SandboxState

TOKEN_PATH = "/open-apis/authen/v2/oauth/token"
FORM_TYPE = "application/x-www-form-urlencoded"

# The token endpoint's error table (docs: get-user-access-token, refresh-user-access-token):
# code -> (HTTP status, description as documented, RFC 6749 `error` type). The descriptions and
# statuses are Lark's; Lark documents the `error` type only for 20050 (server_error), so the
# others are the RFC 6749 §5.2 type that fits (the sandbox's choice).
TOKEN_ERRORS: dict[int, tuple[int, str, str]] = {
    20001: (400, "The request is missing a required parameter.", "invalid_request"),
    20002: (400, "The client secret is invalid.", "invalid_client"),
    20003: (
        400,
        "The authorization code is not found. Please note that an authorization code can only "
        "be used once.",
        "invalid_grant",
    ),
    20004: (400, "The authorization code has expired.", "invalid_grant"),
    20008: (400, "The user does not exist.", "invalid_grant"),
    20024: (
        400,
        "The provided authorization code or refresh token does not match the provided client ID.",
        "invalid_grant",
    ),
    20026: (400, "The refresh token passed is invalid. Please check the value.", "invalid_grant"),
    20036: (400, "The specified grant_type is not supported.", "unsupported_grant_type"),
    20037: (
        400,
        "The refresh token passed has expired. Please generate a new one.",
        "invalid_grant",
    ),
    20048: (400, "The specified app does not exist.", "invalid_client"),
    20049: (400, "PKCE code challenge failed.", "invalid_grant"),
    20063: (400, "The request is malformed. Please check your request.", "invalid_request"),
    20065: (
        400,
        "The authorization code has been used. Please note that an authorization code can only "
        "be used once.",
        "invalid_grant",
    ),
    20067: (
        400,
        "The provided scope list contains duplicate scopes. Please ensure all scopes are unique.",
        "invalid_scope",
    ),
    20068: (
        400,
        "The provided scope list contains scopes that are not permitted. Please ensure all "
        "scopes are allowed.",
        "invalid_scope",
    ),
    20070: (
        400,
        "Multiple authentication methods were provided. Please only use one to proceed.",
        "invalid_request",
    ),
    20071: (
        400,
        "The provided redirect URI does not match the one used during authorization.",
        "invalid_grant",
    ),
    20073: (
        400,
        "The refresh token has been used. Please note that a refresh token can only be used once.",
        "invalid_grant",
    ),
}


class TokenRefused(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


async def _token_body(request: web.Request) -> dict[str, str]:
    """Lark documents a JSON body; RFC 6749's form encoding is read too (the document's own
    example uses golang.org/x/oauth2, which sends that)."""
    if request.content_type == FORM_TYPE:
        form = await request.post()
        return {k: v for k, v in form.items() if isinstance(v, str)}
    try:
        body = json.loads(await request.text())
    except ValueError:
        raise TokenRefused(20063) from None
    if not isinstance(body, dict) or not all(
        isinstance(v, str) for v in body.values() if v is not None
    ):
        raise TokenRefused(20063)
    return {k: v for k, v in body.items() if v is not None}


def _basic_credentials(header: str) -> tuple[str, str] | None:
    """RFC 6749 §2.3.1 client_secret_basic: base64 of urlencoded id ":" urlencoded secret."""
    if not header.lower().startswith("basic "):
        return None
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise TokenRefused(20063) from None
    client_id, colon, secret = decoded.partition(":")
    if not colon:
        raise TokenRefused(20063)
    return unquote_plus(client_id), unquote_plus(secret)


def _client(state: SandboxState, body: dict[str, str], header: str) -> App:
    basic = _basic_credentials(header)
    if basic is not None and "client_secret" in body:
        raise TokenRefused(20070)
    if basic is not None and body.get("client_id", basic[0]) != basic[0]:
        raise TokenRefused(20063)
    client_id, secret = basic or (body.get("client_id", ""), body.get("client_secret", ""))
    if not client_id or not secret:
        raise TokenRefused(20001)
    app = state.apps.get(client_id)
    if app is None:
        raise TokenRefused(20048)
    if not secrets.compare_digest(secret.encode(), app.app_secret.encode()):
        raise TokenRefused(20002)
    return app


def _narrowed(granted: str, asked: str | None) -> str:
    """The token's scope: all that was granted, or the `scope` parameter's subset of it."""
    if asked is None:
        return granted
    scopes = split_scope(asked)
    if len(set(scopes)) != len(scopes):
        raise TokenRefused(20067)
    if not set(scopes) <= set(split_scope(granted)):
        raise TokenRefused(20068)
    return joined_scope(scopes)


def _by_code(
    state: SandboxState, app: App, body: dict[str, str], now: float
) -> tuple[str, str, str]:
    """(open_id, granted scope, token scope) for an authorization code, which is now used."""
    grant = state.oauth.codes.get(body["code"])
    if grant is None:
        raise TokenRefused(20003)
    if grant.used:
        raise TokenRefused(20065)
    if grant.app_id != app.app_id:
        raise TokenRefused(20024)
    if grant.expires_at <= now:
        raise TokenRefused(20004)
    # optional in Lark's table; when sent it must be the authorize request's
    if "redirect_uri" in body and body["redirect_uri"] != grant.redirect_uri:
        raise TokenRefused(20071)
    if grant.code_challenge and not pkce_matches(
        grant.code_challenge_method, grant.code_challenge, body.get("code_verifier", "")
    ):
        raise TokenRefused(20049)
    scope = _narrowed(grant.scope, body.get("scope"))
    if grant.open_id not in state.users:
        raise TokenRefused(20008)
    grant.used = True
    return grant.open_id, grant.scope, scope


def _by_refresh(
    state: SandboxState, app: App, body: dict[str, str], now: float
) -> tuple[str, str, str]:
    """(open_id, granted scope, token scope) for a refresh token, which is now used."""
    grant = state.oauth.refresh_tokens.get(body["refresh_token"])
    if grant is None:
        raise TokenRefused(20026)
    if grant.used:
        raise TokenRefused(20073)
    if grant.app_id != app.app_id:
        raise TokenRefused(20024)
    if grant.expires_at <= now:
        raise TokenRefused(20037)
    scope = _narrowed(grant.scope, body.get("scope"))
    if grant.open_id not in state.users:
        raise TokenRefused(20008)
    grant.used = True  # Lark: a refresh token is used once; the access token it came with lives on
    return grant.open_id, grant.scope, scope


GRANTS = {"authorization_code": ("code", _by_code), "refresh_token": ("refresh_token", _by_refresh)}
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}  # RFC 6749 §5.1


async def _redeemed(request: web.Request, state: SandboxState) -> tuple[App, str, str, str, float]:
    """(app, open_id, granted scope, token scope, now) for a token request Lark would grant."""
    body = await _token_body(request)
    grant_type = body.get("grant_type", "")
    if not grant_type:
        raise TokenRefused(20001)
    if grant_type not in GRANTS:
        raise TokenRefused(20036)
    field, redeem = GRANTS[grant_type]
    if not body.get(field):
        raise TokenRefused(20001)
    app = _client(state, body, request.headers.get("Authorization", ""))
    now = state.now_s()
    return (app, *redeem(state, app, body, now), now)


async def token(request: web.Request) -> web.Response:
    state = request.app[STATE_KEY]
    try:
        app, open_id, granted, scope, now = await _redeemed(request, state)
    except TokenRefused as refused:
        status, description, error = TOKEN_ERRORS[refused.code]
        answer = {"code": refused.code, "error": error, "error_description": description}
        return web.json_response(answer, status=status, headers=NO_STORE)
    form = request.content_type == FORM_TYPE
    access, refresh = state.oauth.issue_tokens(
        app.app_id, open_id, granted, scope, now, "form" if form else "json"
    )
    state.publish({"type": "oauth"})  # saved with the state file
    body: dict[str, Any] = {"code": 0, "access_token": access.token, "expires_in": USER_TOKEN_TTL_S}
    if refresh is not None:  # only with offline_access, as on Lark
        body |= {"refresh_token": refresh.token, "refresh_token_expires_in": REFRESH_TOKEN_TTL_S}
    body |= {"scope": access.scope, "token_type": "Bearer"}
    return web.json_response(body, headers=NO_STORE)
