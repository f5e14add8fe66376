"""Two consumers, never one (docs/architecture.md §4).

Text and callbacks do not hold each other up: (a) a burst of clicks does not stop text
commands from being answered; (b) a flood of text does not hold the click acknowledgements
behind it; (c) a lost long connection shows in /readyz as a disconnected callback consumer
(HTTP 503) and clears once the SDK is back.

(a) and (b) assert orderings and counts, not durations: how fast the answers come on this
shared 2-core machine is bench/callback_ack.py's to measure. So the sandbox here waits longer
than Lark's 3 s for an answer (`patient_sandbox`), and a loaded machine cannot turn an
answered click into a "timeout".
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from larksandbox import answers
from larksandbox import longconn as sandbox_longconn
from larksandbox import state as sandbox_state
from tests.support.factories import order_request
from tests.support.stack import Stack, StackFactory
from tests.support.waiting import eventually, scaled

# far above Lark's 3 s: under 300 clicks a slow machine may answer late, and lateness is the
# bench's to measure; an answer that never comes still fails
PATIENT_CALLBACK_TIMEOUT_S = 120.0
TEXT_DEADLINE_S = 10.0
OPERATORS = ("ou_alice", "ou_bob")


@pytest.fixture
def roomy_chats(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lift the sandbox's 5 messages/s per chat for these tests: hundreds of cards (and text
    replies) have to be in oc_ops within seconds, and Lark's per-chat limit is not what is
    under test here."""
    monkeypatch.setattr(sandbox_state, "CHAT_SEND_LIMIT_PER_S", 100_000)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    """A client without aiohttp's 100-connection cap, so hundreds of clicks really overlap."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        yield session


async def within(deadline_s: float, check: Callable[[], Awaitable[bool]]) -> None:
    """`eventually` bounded in wall-clock time too: its deadline counts polls, and these
    checks read hundreds of rows per poll."""
    async with asyncio.timeout(scaled(deadline_s)):
        await eventually(check, deadline_s)


async def offer_many(stack: Stack, count: int, prefix: str) -> list[tuple[str, str]]:
    """Propose `count` operations; (operation id, card message id) once each card is offered."""
    views = await asyncio.gather(
        *(stack.propose(order_request(f"{prefix}-{index}")) for index in range(count))
    )
    wanted = {view["id"] for view in views}
    cards: dict[str, str] = {}
    scanned = 0

    def all_posted() -> bool:  # looks at each new sandbox message once
        nonlocal scanned
        fresh = list(itertools.islice(stack.state.messages.values(), scanned, None))
        scanned += len(fresh)
        for message in fresh:
            card = message.card()
            if card is None or message.forwarded_from:
                continue
            button = answers.find_button(card, "confirm")
            op = button.value.get("op") if button is not None and button.value else None
            if op in wanted:
                cards[str(op)] = message.message_id
        return len(cards) == count

    await eventually(all_posted, deadline_s=30, woken_by=stack.state)
    recorded: set[str] = set()

    async def all_recorded() -> bool:  # a click before this would be refused (not offered)
        for op_id in wanted - recorded:
            op = await stack.store.get(op_id)
            if op is not None and op.card_message_id == cards[op_id]:
                recorded.add(op_id)
        return recorded == wanted

    await within(90, all_recorded)
    return [(view["id"], cards[view["id"]]) for view in views]


async def click(
    stack: Stack, http: aiohttp.ClientSession, message_id: str, operator: str
) -> dict[str, Any]:
    async with http.post(
        f"{stack.sandbox.base_url}/sandbox/api/messages/{message_id}/click",
        json={"operator": operator, "button": "confirm"},
    ) as response:
        reply: dict[str, Any] = await response.json()
        assert response.status == 200, reply
        return reply


async def say(stack: Stack, http: aiohttp.ClientSession, text: str, sender: str) -> str:
    async with http.post(
        f"{stack.sandbox.base_url}/sandbox/api/chats/oc_ops/messages",
        json={"sender": sender, "text": text, "mention_bot": True},
    ) as response:
        sent: dict[str, Any] = await response.json()
        assert response.status == 201, sent
        message_id: str = sent["message_id"]
        return message_id


def replied(stack: Stack) -> set[str]:
    """Message ids the bot has replied to."""
    return {
        m.parent_id
        for m in stack.state.messages.values()
        if m.parent_id and m.sender_type == "app" and m.msg_type == "text"
    }


async def consumer(stack: Stack, name: str) -> dict[str, Any]:
    status, body = await stack.api("GET", "/readyz")
    component: dict[str, Any] = body["components"][name]
    return {"http_status": status, **component}


def until_consumer(
    stack: Stack, name: str, predicate: Callable[[dict[str, Any]], bool]
) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return predicate(await consumer(stack, name))

    return check


def patient_sandbox(stack: Stack) -> Stack:
    stack.hub.callback_timeout_s = PATIENT_CALLBACK_TIMEOUT_S
    return stack


def assert_all_acked(replies: list[dict[str, Any]], toasts: set[str]) -> None:
    assert all(reply["status"] == "answered" for reply in replies), [
        r for r in replies if r["status"] != "answered"
    ]
    assert all("client_error" not in reply for reply in replies)
    kinds = {reply["toast"]["type"] for reply in replies}
    assert kinds <= toasts, kinds


# -- (a) ----------------------------------------------------------------------------------------


@pytest.mark.usefixtures("roomy_chats")
async def test_text_is_answered_while_the_callback_consumer_is_saturated(
    make_stack: StackFactory, http: aiohttp.ClientSession
) -> None:
    # the 300 orders also execute; one at a time keeps that from crowding out the clicks
    stack = patient_sandbox(await make_stack("ws", execution={"concurrency": 1}))
    offered = await offer_many(stack, 300, "burst")

    clicks = asyncio.gather(
        *(
            click(stack, http, message_id, OPERATORS[index % 2])
            for index, (_op, message_id) in enumerate(offered)
        )
    )
    # Texts go in while clicks are queued in the callback consumer, not before or after: as
    # soon as the first clicks have arrived, so a slow machine still has hundreds queued.
    await within(60, until_consumer(stack, "callback_consumer", lambda c: c["events"] >= 20))
    texts = await asyncio.gather(
        *(say(stack, http, "help", OPERATORS[index % 2]) for index in range(20))
    )
    acked_before = (await consumer(stack, "callback_consumer"))["answered"]
    assert acked_before < len(offered), "the clicks were all answered before the texts arrived"

    # Every text is answered, in seconds, while the clicks are still being worked off.
    await eventually(
        lambda: set(texts) <= replied(stack), deadline_s=TEXT_DEADLINE_S, woken_by=stack.state
    )
    for message_id in texts:
        [reply] = [
            json.loads(m.content)["text"]
            for m in stack.state.messages.values()
            if m.parent_id == message_id and m.sender_type == "app"
        ]
        assert "never by text" in reply

    # Every click answered: the definitive card, or "processing" when its claim took longer
    # than the 2 s answer budget (the card is then patched).
    replies = await clicks
    assert_all_acked(replies, {"success", "info"})
    claimed: set[str] = set()

    async def all_claimed() -> bool:
        for op_id, _ in offered:
            if op_id not in claimed:
                count = await stack.store.claim_count(op_id)
                assert count <= 1, (op_id, count)
                if count == 1:
                    claimed.add(op_id)
        return len(claimed) == len(offered)

    await within(120, all_claimed)


# -- (b) ----------------------------------------------------------------------------------------


@pytest.mark.usefixtures("roomy_chats")
async def test_clicks_are_answered_in_time_during_a_text_flood(
    make_stack: StackFactory, http: aiohttp.ClientSession
) -> None:
    stack = patient_sandbox(await make_stack("ws"))
    offered = await offer_many(stack, 20, "flood")

    flood = asyncio.gather(
        *(say(stack, http, f"help {index}", OPERATORS[index % 2]) for index in range(500))
    )
    # Clicks go in while the text listener has a backlog.
    await within(60, until_consumer(stack, "text_listener", lambda c: c["events"] >= 100))
    replies = await asyncio.gather(
        *(
            click(stack, http, message_id, OPERATORS[index % 2])
            for index, (_op, message_id) in enumerate(offered)
        )
    )
    text = await consumer(stack, "text_listener")
    assert text["answered"] < 500, "the text flood was over before the clicks went in"

    # Answered before the flood drained: the definitive card, or "processing" when a claim
    # took over the 2 s budget (docs/architecture.md §4); such a card is then patched.
    assert_all_acked(replies, {"success", "info"})
    for (op_id, message_id), reply in zip(offered, replies, strict=True):
        assert reply["card_changed"] or reply["toast"]["type"] == "info", reply
        await eventually(
            lambda message_id=message_id: "Confirmed by" in json.dumps(stack.card(message_id)),
            deadline_s=30,
            woken_by=stack.state,
        )
        assert await stack.store.claim_count(op_id) == 1
    assert len(await flood) == 500


# -- (c) ----------------------------------------------------------------------------------------


async def test_a_lost_long_connection_makes_readyz_fail_until_it_is_back(
    make_stack: StackFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = await make_stack("ws", watchdog_grace_s=2)
    app_id = stack.sandbox.app_id
    ticket_ttl_s = sandbox_longconn.TICKET_TTL_S
    await within(60, until_consumer(stack, "callback_consumer", lambda c: c["http_status"] == 200))

    # Lark refuses new long connections: every ticket is already expired, so the handshake
    # fails with a code the SDK retries (sandbox longconn.py). Then the socket is closed.
    monkeypatch.setattr(sandbox_longconn, "TICKET_TTL_S", -1.0)
    status, closed = await stack.control("POST", f"/apps/{app_id}/disconnect")
    assert (status, closed) == (200, {"closed": 1})

    def watchdog_down(component: dict[str, Any]) -> bool:
        return bool(component["transport"]["watchdog"]["verdict"] == "down")

    await within(60, until_consumer(stack, "callback_consumer", watchdog_down))
    down = await consumer(stack, "callback_consumer")
    assert down["state"] == "disconnected" and down["http_status"] == 503
    assert down["transport"]["state"] == "disconnected"
    _, body = await stack.api("GET", "/readyz")
    assert body["status"] == "unavailable"
    assert stack.hub.longconn.connected(app_id) == 0

    # A click now reaches nobody: Lark shows the user that no callback is configured.
    view, message_id = await stack.offered(order_request("while-down"))
    lost = await stack.click(message_id, "ou_alice")
    assert lost["status"] == "undeliverable" and lost["client_error"] == 200340
    assert await stack.store.claim_count(view["id"]) == 0

    # Lark takes connections again: the SDK's next retry gets in, and readiness comes back.
    monkeypatch.setattr(sandbox_longconn, "TICKET_TTL_S", ticket_ttl_s)
    await eventually(
        lambda: stack.hub.longconn.connected(app_id) == 1, deadline_s=15, woken_by=stack.state
    )
    await within(60, until_consumer(stack, "callback_consumer", lambda c: c["http_status"] == 200))
    up = await consumer(stack, "callback_consumer")
    assert up["transport"]["state"] == "connected" and up["transport"]["reconnects"] >= 1
    reply = await stack.click(message_id, "ou_alice")
    assert reply["status"] == "answered" and reply["toast"]["type"] == "success"
    assert await stack.store.claim_count(view["id"]) == 1
