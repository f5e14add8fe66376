"""An internal IP literal in a callback URL is a 422 at intake (issue 30, item 6): it could
only fail at delivery, where the same function refuses it (workers/targets.py
`parse_callback_target`), unless `[deliveries] allow_internal_targets` allows its network.
Each refusal names the field, what the address is and the fix, and stores nothing."""

from __future__ import annotations

from typing import Any

import pytest

from bot.config import parse, resolve
from store import Store
from tests.support.api import TOKENS, Client, ClientFactory, post, settings_data
from tests.support.factories import order_request

ENV = {**TOKENS, "HOOK_SECRET": "hook-secret-0123456789"}
LOOPBACK = ["127.0.0.0/8", "::1/128"]

# every class of inside address, in the notations a URL can carry
INSIDE = {
    "http://127.0.0.1:9/hook": "loopback",
    "http://[::1]:8080/hook": "loopback",
    "https://127.0.0.2/hook": "loopback",
    "https://10.0.0.1/hook": "private",
    "https://172.16.5.4/hook": "private",
    "https://192.168.1.1/hook": "private",
    "https://169.254.169.254/latest/meta-data": "link-local",
    "https://[fe80::1]/hook": "link-local",
    "https://[fd00::1]/hook": "private",
    "https://0.0.0.0/hook": "unspecified",
    "https://[::]/hook": "unspecified",
    "https://[::ffff:127.0.0.1]/hook": "loopback",
    "https://[::ffff:10.0.0.1]/hook": "private",
    "https://[64:ff9b::a00:1]/hook": "private",
    "https://100.64.0.1/hook": "not globally routable",
    "https://224.0.0.1/hook": "multicast",
}


def with_callback(url: str) -> dict[str, Any]:
    return order_request(source={"callback": {"url": url, "secret_ref": "hook"}})


async def client(client_for: ClientFactory, allowed: list[str]) -> Client:
    data = settings_data(deliveries={"allow_internal_targets": allowed})
    for proposer in data["proposers"]:
        proposer["callback_secret_env"] = {"hook": "HOOK_SECRET"}
    made: Client = await client_for(resolve(parse(data), ENV))
    return made


@pytest.mark.parametrize("url", sorted(INSIDE))
async def test_an_internal_ip_literal_is_a_422_naming_the_field_and_the_fix(
    client_for: ClientFactory, store: Store, url: str
) -> None:
    api = await client(client_for, [])
    for path in ("/api/v1/operations", "/api/v1/operations/check"):
        response = await api.post(
            path,
            json=with_callback(url),
            headers={"Authorization": f"Bearer {ENV['DEV_AGENT_TOKEN']}"},
        )
        reply = await response.json()
        assert response.status == 422, (path, reply)
        [field] = reply["error"]["fields"]
        assert field["field"] == "source.callback.url"
        assert f"is {INSIDE[url]}" in field["reason"]
        assert "allow_internal_targets" in field["fix"]
    assert await store.count() == 0


async def test_a_network_the_config_allows_is_accepted_and_no_other(
    client_for: ClientFactory, store: Store
) -> None:
    api = await client(client_for, LOOPBACK)
    for url in ("http://127.0.0.1:9/hook", "http://[::1]:8080/hook", "https://127.0.0.2/hook"):
        status, view = await post(api, with_callback(url))
        assert status == 201, view
        assert view["source"]["callback"]["url"] == url
    status, refused = await post(api, with_callback("https://10.0.0.1/hook"))
    assert status == 422 and "is private" in refused["error"]["fields"][0]["reason"]
    assert await store.count() == 3


async def test_a_public_address_or_a_host_name_is_left_to_delivery(
    client_for: ClientFactory,
) -> None:
    # a name is resolved only at delivery (its addresses checked there, the request pinned)
    api = await client(client_for, [])
    for url in (
        "https://93.184.216.34/hook",
        "http://localhost:8080/hook",
        "https://agent.example/",
    ):
        status, view = await post(api, with_callback(url))
        assert status == 201, (url, view)
