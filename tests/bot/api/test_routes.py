"""Result routes at intake: where a conclusion may go back to (issue 10, items 2 and 3).

A proposal names a conversation to reply into and a URL to call back. Both are the
proposer's word, so both are checked before anything is stored: the chat must be one the
proposer may reply into and never a counterparty's (a message destination), and the URL must
parse strictly (no userinfo, no hidden characters, a real host and port). Each refusal is a
422 naming the field, and nothing is stored.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from bot.config import check, parse, resolve
from store import Store
from tests.support.api import TOKENS, ClientFactory, auth, settings_data
from tests.support.factories import order_request

Client = TestClient[Any, Any]
HOOK_SECRET = "hook-secret-0123456789"
ENV = {**TOKENS, "HOOK_SECRET": "hook-secret-0123456789"}


def routes_data(**proposer_extra: Any) -> dict[str, Any]:
    data = settings_data()
    data["audiences"].append({"name": "threads", "chat_id": "oc_threads", "operators": ["ou_dave"]})
    for proposer in data["proposers"]:
        proposer["callback_secret_env"] = {"hook": "HOOK_SECRET"}
        proposer.update(proposer_extra.get(proposer["name"], {}))
    return data


@pytest.fixture
async def routed(client_for: ClientFactory) -> Client:
    client: Client = await client_for(resolve(parse(routes_data()), ENV))
    return client


async def post(api: Client, body: Any, token: str = TOKENS["DEV_AGENT_TOKEN"]) -> tuple[int, Any]:
    response = await api.post("/api/v1/operations", data=json.dumps(body), headers=auth(token))
    return response.status, await response.json()


def with_callback(url: str) -> dict[str, Any]:
    return order_request(source={"callback": {"url": url, "secret_ref": "hook"}})


def in_chat(chat_id: str, message_id: str = "om_thread1") -> dict[str, Any]:
    return order_request(source={"conversation": {"chat_id": chat_id, "message_id": message_id}})


# -- item 3: callback URLs parse strictly ------------------------------------------------------

BAD_URLS: dict[str, str] = {
    "ftp scheme": "ftp://agent.example/hook",
    "javascript scheme": "javascript://agent.example/%0aalert(1)",
    "http to a non-loopback host": "http://agent.example/hook",
    "no host": "https:///hook",
    "no authority": "https:hook",
    "port 0": "https://agent.example:0/hook",
    "port 65536": "https://agent.example:65536/hook",
    "port out of any range": "https://agent.example:99999999999/hook",
    "negative port": "https://agent.example:-1/hook",
    "named port": "https://agent.example:https/hook",
    "user and password": "https://user:pw@agent.example/hook",
    "user only": "https://user@agent.example/hook",
    "empty userinfo": "https://@agent.example/hook",
    "userinfo hiding the real host": "https://agent.example@127.0.0.1/hook",
    "space in the path": "https://agent.example/ho ok",
    "tab in the host": "https://agent.\texample/hook",
    "newline at the end": "https://agent.example/hook\n",
    "leading space": " https://agent.example/hook",
    "no-break space": "https://agent.example/\u00a0hook",
    "line separator": "https://agent.example/\u2028hook",
    "NUL": "https://agent.example/\x00hook",
    "DEL": "https://agent.example/\x7fhook",
    "zero-width space in the host": "https://agent\u200b.example/hook",
    "bidi override": "https://agent.example/\u202ekooh",
    "underscore in the host": "https://agent_1.example/hook",
    "label starting with a hyphen": "https://-agent.example/hook",
    "empty label": "https://agent..example/hook",
    "invalid punycode": "https://xn--zz.example/hook",
    "label over 63 characters": f"https://{'a' * 64}.example/hook",
    "percent-encoded host": "https://agent%2Eexample/hook",
    "backslash in the authority": "https://agent.example\\@evil.example/hook",
    "unclosed IPv6 bracket": "https://[2606:4700::1111/hook",
    "not an IPv6 literal": "https://[agent.example]/hook",
    "IPv6 zone id": "https://[fe80::1%25eth0]/hook",
    "decimal integer IPv4": "https://2130706433/hook",
    "hex IPv4": "https://0x7f.1/hook",
    "octal IPv4": "https://0177.0.0.1/hook",
    "short IPv4": "https://127.1/hook",
}


@pytest.mark.parametrize("case", sorted(BAD_URLS))
async def test_a_callback_url_that_does_not_parse_strictly_is_a_422_and_stores_nothing(
    routed: Client, store: Store, case: str
) -> None:
    status, reply = await post(routed, with_callback(BAD_URLS[case]))
    assert status == 422, (case, reply)
    fields = reply["error"]["fields"]
    assert {f["field"] for f in fields} == {"source.callback.url"}, (case, fields)
    assert all(f["reason"] and f["fix"] for f in fields)
    assert await store.count() == 0


GOOD_URLS = [
    "https://agent.example/hook",
    "https://Agent.Example:8443/hook?x=1&y=%20",
    "https://bücher.example/hook",
    "https://xn--bcher-kva.example/hook",
    "https://agent.example./hook",
    "https://93.184.216.34/hook",
    "https://[2606:4700::1111]:443/hook",
    "http://localhost:8080/hook",
    # loopback literals: accepted only where the config allows them (test_callback_inside.py)
]


@pytest.mark.parametrize("url", GOOD_URLS)
async def test_a_well_formed_callback_url_is_accepted(routed: Client, url: str) -> None:
    status, view = await post(routed, with_callback(url))
    assert status == 201, view
    assert view["source"]["callback"]["url"] == url


# -- item 2: replies go only into chats the proposer may use ------------------------------------


async def test_a_reply_into_a_counterparty_chat_is_a_422_and_stores_nothing(
    routed: Client, store: Store
) -> None:
    # oc_acme is the message destination "acme": the counterparty reads it.
    status, reply = await post(routed, in_chat("oc_acme"))
    assert status == 422, reply
    [problem] = reply["error"]["fields"]
    assert problem["field"] == "source.conversation.chat_id"
    assert "'acme'" in problem["reason"] and "oc_ops" in problem["fix"]
    assert await store.count() == 0


async def test_a_reply_into_a_chat_outside_the_proposers_audiences_is_a_422(
    routed: Client, store: Store
) -> None:
    narrow = TOKENS["NARROW_AGENT_TOKEN"]  # may address "ops" only
    body = in_chat("oc_treasury")
    body.update(kind="message.send", payload=_message_payload())
    status, reply = await post(routed, body, narrow)
    assert status == 422, reply
    [problem] = reply["error"]["fields"]
    assert problem["field"] == "source.conversation.chat_id"
    assert "reply_chats" in problem["fix"]
    status, reply = await post(routed, in_chat("oc_random"))  # dev-agent: no audience there
    assert status == 422 and reply["error"]["fields"][0]["field"] == "source.conversation.chat_id"
    assert await store.count() == 0


def _message_payload() -> dict[str, Any]:
    from tests.support.factories import MESSAGE_PAYLOAD

    return dict(MESSAGE_PAYLOAD)


async def test_by_default_a_proposer_replies_into_the_chats_of_audiences_it_may_address(
    routed: Client,
) -> None:
    for chat in ("oc_ops", "oc_treasury", "oc_threads"):  # dev-agent addresses "*"
        status, view = await post(routed, in_chat(chat))
        assert status == 201, view
        assert view["source"]["conversation"]["chat_id"] == chat


async def test_reply_chats_replace_the_default(client_for: ClientFactory, store: Store) -> None:
    data = routes_data(**{"dev-agent": {"reply_chats": ["oc_threads", "oc_agent_room"]}})
    api = await client_for(resolve(parse(data), ENV))
    for chat in ("oc_threads", "oc_agent_room"):
        status, view = await post(api, in_chat(chat))
        assert status == 201, view
    status, reply = await post(api, in_chat("oc_ops"))
    assert status == 422 and reply["error"]["fields"][0]["field"] == "source.conversation.chat_id"
    assert "oc_agent_room" in reply["error"]["fields"][0]["fix"]
    assert await store.count() == 2


def test_config_check_refuses_a_reply_chat_that_is_a_destination_chat() -> None:
    data = routes_data(**{"other-agent": {"reply_chats": ["oc_threads", "oc_acme"]}})
    problems = check(parse(data), ENV)
    [problem] = [p for p in problems if "reply_chats" in p.field]
    assert problem.field == "proposers[1].reply_chats"
    assert "oc_acme" in problem.reason and "acme" in problem.reason
