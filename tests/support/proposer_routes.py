"""The proposer's side of result return: a webhook receiver standing in for its service,
the conversation an agent discussed an order in, and a proposal routed to both."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tests.support.stack import Stack


@dataclass
class Received:
    body: bytes
    headers: dict[str, str]

    @property
    def json(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.body)
        return loaded


@dataclass
class Receiver:
    """The proposer's webhook endpoint: fails the first `fail_first` requests (HTTP 500)."""

    url: str = ""
    fail_first: int = 0
    accepted: list[Received] = field(default_factory=list)
    refused: list[Received] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        got = Received(await request.read(), dict(request.headers))
        if len(self.refused) < self.fail_first:
            self.refused.append(got)
            return web.Response(status=500, text="not now")
        self.accepted.append(got)
        return web.json_response({"ok": True})


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    app = web.Application()
    app.router.add_post("/hook", found.handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    found.url = f"http://127.0.0.1:{server.port}/hook"
    try:
        yield found
    finally:
        await server.close()


async def conversation(stack: Stack) -> str:
    """A message Alice posts in the ops chat: the thread where an agent discussed the order."""
    status, sent = await stack.control(
        "POST", "/chats/oc_ops/messages", {"sender": "ou_alice", "text": "agent: buying BTC"}
    )
    assert status == 201, sent
    message_id: str = sent["message_id"]
    return message_id


def with_routes(
    body: dict[str, Any], *, conversation_id: str | None = None, url: str | None = None
) -> dict[str, Any]:
    source: dict[str, Any] = {}
    if conversation_id is not None:
        source["conversation"] = {"chat_id": "oc_ops", "message_id": conversation_id}
    if url is not None:
        source["callback"] = {"url": url, "secret_ref": "dev"}
    body["source"] = source
    return body


def replies_to(stack: Stack, message_id: str) -> list[str]:
    return [
        json.loads(m.content)["text"]
        for m in stack.state.messages.values()
        if m.parent_id == message_id and m.sender_type == "app"
    ]
