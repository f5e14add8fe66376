"""Dashboard and health hygiene (issue 10 item 10): browser-readable pages answer only to
configured Host names (DNS rebinding), a same-host reverse proxy does not make every client
loopback, and the dashboard's token cookie is Secure over https."""

from __future__ import annotations

import ssl
from typing import Any

import aiohttp
import pytest
import trustme
from aiohttp.test_utils import TestClient, TestServer

from bot.api.app import create_app
from bot.api.hosts import host_allowed
from store import Store
from tests.support.api import TOKENS, ClientFactory, auth, make_config, resolve_with
from tests.support.factories import draft

Client = TestClient[Any, Any]
DASHBOARD_TOKEN = "dashboard-token-0123456789"


@pytest.mark.parametrize("path", ["/ops", "/ops/changes?since=x", "/readyz", "/metrics"])
async def test_a_foreign_host_name_is_refused_on_browser_readable_pages(
    api: Client, store: Store, path: str
) -> None:
    # DNS rebinding: evil.example now resolves to 127.0.0.1, and the victim's browser reads
    # the page as evil.example's own. The Host header still says evil.example.
    op = (await store.propose(draft())).operation
    response = await api.get(path, headers={"Host": "evil.example:8080"})
    assert response.status == 421, path
    text = await response.text()
    assert "allowed_hosts" in text and op.id not in text and "oc_ops" not in text
    if path.startswith("/ops"):
        assert response.content_type == "text/html"
    else:
        assert (await response.json())["error"]["code"] == "misdirected"


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "127.0.0.1:8080", "localhost:1234", "LocalHost.", "[::1]:8080", "10.9.8.7:80"],
)
async def test_loopback_names_and_address_literals_are_answered(api: Client, host: str) -> None:
    for path in ("/ops", "/readyz", "/metrics"):
        response = await api.get(path, headers={"Host": host})
        assert response.status in (200, 503), (path, host)  # 503: readiness, not refusal


async def test_configured_names_are_answered_and_the_api_is_not_host_bound(
    client_for: ClientFactory,
) -> None:
    api = await client_for(make_config(http={"allowed_hosts": ["ops.example.com"]}))
    assert (await api.get("/ops", headers={"Host": "ops.example.com:443"})).status == 200
    assert (await api.get("/ops", headers={"Host": "OPS.example.com"})).status == 200
    assert (await api.get("/ops", headers={"Host": "ops.example.com.evil"})).status == 421
    # Bearer tokens are not ambient credentials: a rebound page cannot use them, so the API
    # (and the constant /healthz) answer whatever the Host.
    response = await api.get("/api/v1/operations", headers={**auth(), "Host": "evil.example"})
    assert response.status == 200
    assert (await api.get("/healthz", headers={"Host": "evil.example"})).status == 200


async def test_any_host_when_configured_so(client_for: ClientFactory) -> None:
    api = await client_for(make_config(http={"allowed_hosts": ["*"]}))
    assert (await api.get("/ops", headers={"Host": "anything.example"})).status == 200


@pytest.mark.parametrize(
    "header",
    [
        {"X-Forwarded-For": "203.0.113.9"},
        {"Forwarded": "for=203.0.113.9;proto=https"},
        {"X-Real-IP": "203.0.113.9"},
    ],
)
async def test_a_proxied_request_from_loopback_is_not_a_loopback_client(
    client_for: ClientFactory, store: Store, header: dict[str, str]
) -> None:
    op = (await store.propose(draft())).operation
    api = await client_for()
    response = await api.get("/ops", headers=header)
    assert response.status == 403 and response.content_type == "text/html"
    assert op.id not in await response.text()
    assert (await api.get(f"/ops/{op.id}", headers=header)).status == 403
    assert (await api.get("/ops/changes?since=x", headers=header)).status == 403
    # an operator who says the proxy is trusted gets the old behaviour back
    trusting = await client_for(make_config(http={"trust_loopback_proxy": True}))
    assert (await trusting.get("/ops", headers=header)).status == 200


async def test_a_proxied_request_with_the_token_is_let_in(client_for: ClientFactory) -> None:
    api = await client_for(resolve_with(DASHBOARD_TOKEN, http={"dashboard_token_env": "DASH"}))
    proxied = {"X-Forwarded-For": "203.0.113.9"}
    assert (await api.get("/ops?token=wrong-token-0000000", headers=proxied)).status == 403
    response = await api.get(f"/ops?token={DASHBOARD_TOKEN}", headers=proxied)
    assert response.status == 200


def cookie_attributes(response: Any) -> set[str]:
    [header] = response.headers.getall("Set-Cookie")
    return {part.strip().split("=")[0].lower() for part in header.split(";")[1:]}


async def test_the_token_cookie_is_secure_behind_an_https_proxy_and_never_script_readable(
    client_for: ClientFactory,
) -> None:
    api = await client_for(resolve_with(DASHBOARD_TOKEN, http={"dashboard_token_env": "DASH"}))
    plain = await api.get(f"/ops?token={DASHBOARD_TOKEN}")
    assert {"httponly", "samesite", "path"} <= cookie_attributes(plain)
    assert "secure" not in cookie_attributes(plain)  # a plain-http deployment keeps working
    for proto in ({"X-Forwarded-Proto": "https"}, {"Forwarded": "for=1.2.3.4;proto=https"}):
        behind = await api.get(f"/ops?token={DASHBOARD_TOKEN}", headers=proto)
        assert behind.status == 200 and "secure" in cookie_attributes(behind)
        assert "Path=/ops" in behind.headers["Set-Cookie"]


@pytest.fixture
def tls() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A certificate for 127.0.0.1 from a throwaway CA: (server context, client context)."""
    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server)
    client = ssl.create_default_context()
    ca.configure_trust(client)
    return server, client


async def test_the_token_cookie_is_secure_when_served_over_https(
    store: Store, tls: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    server_context, client_context = tls
    config = resolve_with(DASHBOARD_TOKEN, http={"dashboard_token_env": "DASH"})
    server = TestServer(create_app(config, store))
    await server.start_server(ssl=server_context)
    try:
        connector = aiohttp.TCPConnector(ssl=client_context)
        async with aiohttp.ClientSession(connector=connector) as http:
            url = f"https://127.0.0.1:{server.port}/ops?token={DASHBOARD_TOKEN}"
            async with http.get(url) as response:
                assert response.status == 200
                assert {"secure", "httponly", "samesite"} <= cookie_attributes(response)
    finally:
        await server.close()


def test_host_matching() -> None:
    names = frozenset({"localhost", "ops.example.com"})
    assert host_allowed("ops.example.com", names)
    assert host_allowed("ops.example.com.:8443", names)
    assert host_allowed("[::1]", names) and host_allowed("192.0.2.1:80", names)
    for bad in (None, "", "evil.example", "user@localhost", "localhost:abc", "local host", "[::1"):
        assert not host_allowed(bad, names), bad
    assert host_allowed("anything", frozenset({"*"}))
    assert not host_allowed("", frozenset({"*"}))


async def test_an_api_token_is_not_a_dashboard_token(client_for: ClientFactory) -> None:
    api = await client_for(resolve_with(DASHBOARD_TOKEN, http={"dashboard_token_env": "DASH"}))
    proxied = {"X-Forwarded-For": "203.0.113.9"}
    response = await api.get(f"/ops?token={TOKENS['DEV_AGENT_TOKEN']}", headers=proxied)
    assert response.status == 403
