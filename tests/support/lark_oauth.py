"""Lark's web sign-in against a sandbox, step by step, as a browser and a web app do it.

The browser steps read the consent page's form and post it as a browser would; redirects are
read from `Location`, never followed (nothing listens at the redirect URIs used here).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import aiohttp
import lark_oapi as lark  # type: ignore[import-untyped]
from aiohttp.test_utils import TestServer
from lark_oapi.api.authen.v1 import GetUserInfoRequest  # type: ignore[import-untyped]

from larksandbox import HUB_KEY, SandboxOptions, SandboxState, build_sandbox
from tests.support.sandbox import Sandbox, sdk

# Where the web app wants the browser back; registered per test with `register_redirects`.
REDIRECT = "http://127.0.0.1:8080/ops/auth/lark/callback"
AUTHORIZE = "/open-apis/authen/v1/authorize"
TOKEN = "/open-apis/authen/v2/oauth/token"
USER_INFO = "/open-apis/authen/v1/user_info"


async def register_redirects(sandbox: Sandbox, *urls: str, app_id: str | None = None) -> None:
    """Set the app's redirect URLs through the control API (Lark: Security Settings)."""
    path = f"/apps/{app_id or sandbox.app.app_id}"
    status, body = await sandbox.control("PATCH", path, {"redirect_urls": list(urls)})
    assert status == 200, body


def authorize_url(sandbox: Sandbox, **params: str) -> str:
    """The authorize link a web app builds; `client_id`, `response_type` and `redirect_uri`
    default to the sandbox app's, "code" and REDIRECT. A value of "" leaves the parameter out."""
    query = {
        "client_id": sandbox.app.app_id,
        "response_type": "code",
        "redirect_uri": REDIRECT,
        **params,
    }
    return f"{sandbox.base_url}{AUTHORIZE}?{urlencode({k: v for k, v in query.items() if v})}"


@dataclass
class Page:
    status: int
    headers: dict[str, str]
    html: str
    form: ConsentForm


class ConsentForm(HTMLParser):
    """The consent page's form: where it posts, its hidden fields, the users it offers, the
    ids of its elements."""

    def __init__(self) -> None:
        super().__init__()
        self.action = ""
        self.hidden: dict[str, str] = {}
        self.users: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if "id" in found:
            self.ids.add(found["id"])
        if tag == "form":
            self.action = found.get("action", "")
        elif tag == "input" and found.get("type") == "hidden":
            self.hidden[found["name"]] = found.get("value", "")
        elif tag == "option":
            self.users.append(found["value"])


async def open_page(sandbox: Sandbox, url: str) -> Page:
    async with sandbox.http.get(url, allow_redirects=False) as response:
        html = await response.text()
        form = ConsentForm()
        form.feed(html)
        return Page(response.status, dict(response.headers), html, form)


@dataclass
class Sent:
    """Where a form post sent the browser: the status, `Location`, and the query it carries."""

    status: int
    location: str | None
    html: str

    @property
    def params(self) -> dict[str, str]:
        assert self.location is not None, self.html
        return dict(parse_qsl(urlsplit(self.location).query))


async def post_form(sandbox: Sandbox, action: str, fields: dict[str, str]) -> Sent:
    async with sandbox.http.post(
        f"{sandbox.base_url}{action}", data=fields, allow_redirects=False
    ) as response:
        return Sent(response.status, response.headers.get("Location"), await response.text())


async def decide(page: Page, sandbox: Sandbox, user: str, decision: str = "approve") -> Sent:
    """Pick `user` in the page's select and press Approve or Deny."""
    assert page.status == 200, page.html
    return await post_form(
        sandbox, page.form.action, {**page.form.hidden, "user": user, "decision": decision}
    )


async def sign_in(sandbox: Sandbox, user: str, **params: str) -> dict[str, str]:
    """Authorize as `user` (params as for `authorize_url`); the redirect's query."""
    page = await open_page(sandbox, authorize_url(sandbox, **params))
    sent = await decide(page, sandbox, user)
    assert sent.status == 302, sent.html
    return sent.params


async def exchange(
    sandbox: Sandbox, body: dict[str, Any] | str, *, form: bool = False, basic: str = ""
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """POST the token endpoint: JSON (Lark's documented body), form-encoded, or raw text."""
    headers = {"Authorization": f"Basic {basic}"} if basic else {}
    kwargs: dict[str, Any] = {"data": body} if form or isinstance(body, str) else {"json": body}
    async with sandbox.http.post(
        f"{sandbox.base_url}{TOKEN}", headers=headers, **kwargs
    ) as response:
        return response.status, await response.json(), dict(response.headers)


def code_body(sandbox: Sandbox, code: str, /, **overrides: Any) -> dict[str, Any]:
    """The authorization_code request a web app sends; a value of None leaves the field out."""
    body = {
        "grant_type": "authorization_code",
        "client_id": sandbox.app.app_id,
        "client_secret": sandbox.app.app_secret,
        "code": code,
        "redirect_uri": REDIRECT,
        **overrides,
    }
    return {k: v for k, v in body.items() if v is not None}


def basic_auth(client_id: str, secret: str) -> str:
    return base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def pkce_pair() -> tuple[str, str]:
    """(code_verifier, its S256 code_challenge), RFC 7636."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


async def user_info(sandbox: Sandbox, token: str | None) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with sandbox.http.get(f"{sandbox.base_url}{USER_INFO}", headers=headers) as response:
        return response.status, await response.json()


def sdk_user_client(base_url: str) -> Any:
    """The unmodified SDK as a web app calls Lark with a user's token (`enable_set_token`)."""
    return (
        lark.Client.builder()
        .enable_set_token(True)
        .domain(base_url)
        .log_level(lark.LogLevel.ERROR)
        .build()
    )


async def sdk_user_info(base_url: str, token: str) -> Any:
    """`authen.v1.user_info.get` with the user access token, off the sandbox's loop."""
    option = lark.RequestOption.builder().user_access_token(token).build()
    client = sdk_user_client(base_url)
    return await sdk(client.authen.v1.user_info.get, GetUserInfoRequest.builder().build(), option)


@asynccontextmanager
async def serving(state: SandboxState, state_file: Path | None = None) -> AsyncIterator[Sandbox]:
    """Another sandbox on a loopback port from `state` (a restart); saved to `state_file` when
    the block ends, as `countersign sandbox --state` does at shutdown."""
    app = build_sandbox(state, SandboxOptions(state_file=state_file))
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as http:
            yield Sandbox(f"http://127.0.0.1:{server.port}", state, app[HUB_KEY], http)
    finally:
        await server.close()
