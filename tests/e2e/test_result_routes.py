"""Result routes at delivery: replies only under a message of the named chat, webhooks only
to addresses outside, never through a redirect (issue 10, items 2 and 3).

Real parts: the bot against the sandbox (Lark answers the message read), real HTTP receivers
on 127.0.0.1. A declined proposal is the quickest conclusion: one reply and one webhook each.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from store import Click, Conversation, Decided, Delivery, DeliveryLedger, Source
from tests.support.factories import offered, order_request
from tests.support.stack import Stack, StackFactory
from tests.support.waiting import eventually


async def post_as_alice(stack: Stack, chat_id: str, text: str) -> str:
    status, sent = await stack.control(
        "POST", f"/chats/{chat_id}/messages", {"sender": "ou_alice", "text": text}
    )
    assert status == 201, sent
    message_id: str = sent["message_id"]
    return message_id


def app_messages(stack: Stack, chat_id: str) -> list[Any]:
    return [
        m for m in stack.state.messages.values() if m.chat_id == chat_id and m.sender_type == "app"
    ]


async def declined(stack: Stack, source: dict[str, Any]) -> str:
    """Propose with these routes and reject the card: its conclusion is due at once."""
    view, card = await stack.offered(order_request(source=source))
    assert (await stack.click(card, "ou_bob", "reject"))["status"] == "answered"
    operation_id: str = view["id"]
    return operation_id


async def settled(stack: Stack, operation_id: str, channel: str, state: str) -> Delivery:
    ledger = DeliveryLedger(stack.store)
    found: list[Delivery] = []

    async def done() -> bool:
        found[:] = [d for d in await ledger.find(operation_id=operation_id) if d.channel == channel]
        return bool(found) and found[0].state == state

    await eventually(done, deadline_s=20)
    return found[0]


# -- item 2: the message id must belong to the named chat ---------------------------------------


async def test_a_reply_under_a_message_of_another_chat_fails_for_good_and_posts_nothing(
    make_stack: StackFactory,
) -> None:
    # The proposer names oc_ops (allowed) but a message of the counterparty chat oc_acme:
    # Lark would put the reply in oc_acme, under the counterparty's eyes.
    stack: Stack = await make_stack("ws")
    in_acme = await post_as_alice(stack, "oc_acme", "counterparty thread")
    smuggled = await declined(stack, {"conversation": {"chat_id": "oc_ops", "message_id": in_acme}})
    unknown = await declined(
        stack, {"conversation": {"chat_id": "oc_ops", "message_id": "om_nosuchmessage"}}
    )

    wrong_chat = await settled(stack, smuggled, "reply", "failed")
    assert wrong_chat.attempts == 1, "a mismatch is permanent: no retry"
    assert wrong_chat.last_error is not None
    assert (
        "not in chat oc_ops" in wrong_chat.last_error and "nothing posted" in wrong_chat.last_error
    )
    missing = await settled(stack, unknown, "reply", "failed")
    assert missing.attempts == 1 and missing.last_error is not None
    assert "om_nosuchmessage" in missing.last_error and "nothing posted" in missing.last_error

    assert app_messages(stack, "oc_acme") == []  # nothing reached the counterparty
    assert not any(
        m.parent_id in (in_acme, "om_nosuchmessage") for m in stack.state.messages.values()
    )
    # the error names only the chat the proposer gave, never where the message really is
    assert "oc_acme" not in wrong_chat.last_error


async def test_a_stored_reply_route_into_a_destination_chat_is_refused_at_delivery(
    make_stack: StackFactory,
) -> None:
    # A route stored before oc_acme became a message destination (intake refuses it now):
    # the message really is in oc_acme, so only the destination rule can stop the reply.
    stack: Stack = await make_stack("ws")
    in_acme = await post_as_alice(stack, "oc_acme", "counterparty thread")
    source = Source("dev-agent", "before-the-rule", conversation=Conversation("oc_acme", in_acme))
    op = await offered(stack.store, source=source)
    decided = await stack.store.reject(Click(op.id, "reject", op.confirm_digest, "ou_bob"))
    assert isinstance(decided, Decided)

    refused = await settled(stack, op.id, "reply", "failed")
    assert refused.attempts == 1 and refused.last_error is not None
    assert (
        "'acme', read by outsiders" in refused.last_error and "nothing posted" in refused.last_error
    )
    assert app_messages(stack, "oc_acme") == []


async def test_a_transient_error_of_the_message_check_is_retried_then_replied_once(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws")
    thread = await post_as_alice(stack, "oc_ops", "agent: buying BTC")
    status, _ = await stack.control("POST", "/faults", {"fail_next_gets": 2})
    assert status == 200
    operation_id = await declined(
        stack, {"conversation": {"chat_id": "oc_ops", "message_id": thread}}
    )
    reply = await settled(stack, operation_id, "reply", "delivered")
    attempts = await DeliveryLedger(stack.store).attempts(reply.id)
    assert [a.ok for a in attempts] == [False, False, True]
    replies = [m for m in app_messages(stack, "oc_ops") if m.parent_id == thread]
    assert len(replies) == 1
    assert "Rejected — nothing executed" in json.loads(replies[0].content)["text"]


# -- item 3: webhooks reach only what may be reached ---------------------------------------------


@dataclass
class Receiver:
    url: str = ""
    answer: Callable[[web.Request], web.Response] = lambda _request: web.json_response({})
    seen: list[str] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append(f"{request.method} {request.path_qs}")
        return self.answer(request)


@pytest.fixture
async def receivers() -> AsyncIterator[Callable[[], Any]]:
    servers: list[TestServer] = []

    async def start() -> Receiver:
        found = Receiver()
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", found.handle)  # every path counts
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        servers.append(server)
        found.url = f"http://127.0.0.1:{server.port}"
        return found

    yield start
    for server in servers:
        await server.close()


async def test_with_internal_targets_off_a_loopback_receiver_receives_nothing(
    make_stack: StackFactory, receivers: Callable[[], Any]
) -> None:
    stack: Stack = await make_stack("ws")  # loopback allowed while these are filed
    receiver: Receiver = await receivers()
    port = receiver.url.rsplit(":", 1)[1]
    literals = [f"http://127.0.0.1:{port}/hook", f"http://[::1]:{port}/hook"]
    urls = [*literals, f"http://localhost:{port}/hook"]
    filed = [
        await stack.offered(order_request(source={"callback": {"url": url, "secret_ref": "dev"}}))
        for url in urls
    ]
    await stack.restart(deliveries={"allow_internal_targets": []})
    for view, card in filed:
        assert (await stack.click(card, "ou_bob", "reject"))["status"] == "answered"
        refused = await settled(stack, view["id"], "webhook", "failed")
        assert refused.attempts == 1, "a refused address is permanent: no retry"
        assert refused.last_error is not None and "loopback" in refused.last_error
        assert "allow_internal_targets" in refused.last_error
    assert receiver.seen == []
    for url in literals:  # filed now, an inside literal is refused at intake: the same check
        status, answer = await stack.post(
            "/api/v1/operations",
            order_request(source={"callback": {"url": url, "secret_ref": "dev"}}),
        )
        assert status == 422, answer
        [problem] = answer["error"]["fields"]
        assert problem["field"] == "source.callback.url" and "is loopback" in problem["reason"]


async def test_a_redirect_is_not_followed_and_the_attempt_records_the_3xx(
    make_stack: StackFactory, receivers: Callable[[], Any]
) -> None:
    stack: Stack = await make_stack("ws", deliveries={"max_attempts": 2})
    inner: Receiver = await receivers()
    outer: Receiver = await receivers()
    outer.answer = lambda _request: web.Response(
        status=307, headers={"Location": f"{inner.url}/internal"}
    )
    operation_id = await declined(
        stack, {"callback": {"url": f"{outer.url}/hook", "secret_ref": "dev"}}
    )
    failed = await settled(stack, operation_id, "webhook", "failed")
    attempts = await DeliveryLedger(stack.store).attempts(failed.id)
    assert [(a.ok, a.code) for a in attempts] == [(False, 307), (False, 307)]
    assert failed.last_error is not None and "307" in failed.last_error
    assert outer.seen == ["POST /hook", "POST /hook"]
    assert inner.seen == []
