"""SIGKILL in the middle of a burst of clicks, then restart: every answered click is on record.

A real `countersign run --config FILE` process (ws mode, against an in-process sandbox)
offers 50 operations; 200 clicks arrive at once (on each card: Alice and Bob confirm, Bob
rejects, Mallory, who is no operator, confirms). The process is SIGKILLed while clicks are
still in flight, and a second process takes over. Then:

- every click the sandbox saw answered is in `confirmations`, with the reason its toast
  gave (a "processing" answer promised only that the click was received: any record);
- every operation has at most one claim, and at most one accepted decision;
- the venue saw every client id at most once, and only for claimed operations.
"""

from __future__ import annotations

import asyncio
import random
import signal
from pathlib import Path
from typing import Any

import aiohttp

from bot.ingress.callbacks import INBOX_KIND
from cards.strings import REFUSALS, TEXT
from larksandbox import Click, answers
from store import RECEIVED, Confirmation, Inbox, State, Store
from tests.support.backends import Backend
from tests.support.bot_processes import (
    RECOVERY_DEADLINE_S,
    Lark,
    bot_processes,
    connected,
    first_bot,
    offer,
    sandbox_alone,
)
from tests.support.factories import order_request
from tests.support.waiting import eventually
from workers.domains.execution import client_id_for
from workers.domains.finance.sim.venue import SimVenue

OPERATIONS = 50
# (operator, button) on every card: two confirms race, a reject races them, an outsider tries
CLICKERS = (("ou_alice", "confirm"), ("ou_bob", "confirm"), ("ou_bob", "reject"))
OUTSIDER = ("ou_mallory", "confirm")
KILL_AFTER_ANSWERS = 60  # the kill lands with most of the burst in flight
OFFER_AT_ONCE = 10


def expected_record(toast: dict[str, Any] | None) -> str | None:
    """What the answer told the operator, as the record must say it: "accepted", a reason
    code, or None for an answer that promises only that the click was received."""
    content = (toast or {}).get("content")
    if content in (TEXT["toast.confirmed"]["en"], TEXT["toast.rejected"]["en"]):
        return "accepted"
    if content == TEXT["toast.processing"]["en"]:
        return None
    for reason, texts in REFUSALS.items():
        if content == texts["en"]:
            return reason.value
    raise AssertionError(f"an answer nobody can map to a record: {toast!r}")


def answered_clicks(lark: Lark) -> list[Click]:
    """The clicks the sandbox saw answered (status "answered": an answer Lark could use)."""
    return [click for click in lark.state.clicks if click.status == "answered"]


def record_of(confirmation: Confirmation) -> str:
    return "accepted" if confirmation.accepted else str(confirmation.reason_code)


async def offer_all(bot: Any, lark: Lark, store: Store) -> list[tuple[str, str]]:
    """(operation id, card message id) for OPERATIONS orders, a few proposals at a time."""
    offered: list[tuple[str, str]] = []
    for start in range(0, OPERATIONS, OFFER_AT_ONCE):
        bodies = []
        for index in range(start, min(start + OFFER_AT_ONCE, OPERATIONS)):
            body = order_request(f"burst-{index}")
            body["payload"].pop("protective")  # one venue order per claim
            bodies.append(body)
        for view, message_id in await asyncio.gather(
            *(offer(bot, lark, store, body) for body in bodies)
        ):
            offered.append((view["id"], message_id))
    return offered


async def send_click(
    http: aiohttp.ClientSession, lark: Lark, message_id: str, operator: str, value: Any
) -> int:
    url = f"{lark.app.base_url}/sandbox/api/messages/{message_id}/click"
    async with http.post(url, json={"operator": operator, "value": value}) as response:
        await response.read()
        return response.status


def burst(lark: Lark, offered: list[tuple[str, str]]) -> list[tuple[str, str, dict[str, Any]]]:
    """Every click of the burst (message id, operator, value), shuffled (seeded)."""
    clicks = []
    for _operation_id, message_id in offered:
        card = lark.state.messages[message_id].card()
        assert card is not None
        for operator, name in (*CLICKERS, OUTSIDER):
            button = answers.find_button(card, name)
            assert button is not None and button.value is not None
            clicks.append((message_id, operator, dict(button.value)))
    random.Random(20261203).shuffle(clicks)
    return clicks


async def test_sigkill_mid_burst_keeps_every_answered_click_on_record(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    inbox = Inbox(store)
    async with sandbox_alone() as lark, bot_processes() as start:
        config, env, first = await first_bot(start, lark, backend, tmp_path)
        offered = await offer_all(first, lark, store)
        clicks = burst(lark, offered)
        assert len(clicks) == 4 * OPERATIONS

        # Every button value is given explicitly: a card already decided still gets clicked
        # (as a client showing it stale would), so the burst does not thin out as it goes.
        # One connection per click (aiohttp's default pool holds 100): all 200 at once.
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
            pending = [
                asyncio.create_task(send_click(http, lark, message_id, operator, value))
                for message_id, operator, value in clicks
            ]
            await eventually(
                lambda: len(answered_clicks(lark)) >= KILL_AFTER_ANSWERS, 60, woken_by=lark.state
            )
            assert await first.kill() == -signal.SIGKILL
            statuses = await asyncio.gather(*pending)
        assert set(statuses) == {200}, statuses
        assert len(lark.state.clicks) == len(clicks)
        answered = answered_clicks(lark)
        assert KILL_AFTER_ANSWERS <= len(answered) < len(clicks), len(answered)  # mid-burst

        second = await start(config, env)
        await eventually(lambda: connected(second), deadline_s=30)

        async def recovered() -> bool:  # every click the first process received is settled
            return await inbox.count(INBOX_KIND, RECEIVED) == 0

        await eventually(recovered, deadline_s=RECOVERY_DEADLINE_S)

        # Every click the sandbox saw answered is on record, with the reason it was told.
        records: dict[str, list[Confirmation]] = {}
        for operation_id, _message_id in offered:
            for confirmation in await store.confirmations(operation_id):
                assert confirmation.event_id is not None
                records.setdefault(confirmation.event_id, []).append(confirmation)
        missing, wrong = [], []
        for click in answered:
            found = records.get(click.event_id, [])
            expected = expected_record(click.toast)
            if len(found) != 1:
                missing.append((click.event_id, click.operator, click.toast, len(found)))
            elif expected is not None and record_of(found[0]) != expected:
                wrong.append((click.event_id, expected, record_of(found[0])))
        assert not missing, f"{len(missing)} answered click(s) not on record once: {missing}"
        assert not wrong, f"answered one way, recorded another: {wrong}"
        assert all(len(found) == 1 for found in records.values())  # nothing recorded twice

        # At most one claim and one accepted decision per operation.
        claimed: set[str] = set()
        for operation_id, _message_id in offered:
            claims = await store.claim_count(operation_id)
            assert claims <= 1, operation_id
            accepted = [c for c in await store.confirmations(operation_id) if c.accepted]
            assert len(accepted) <= 1, (operation_id, accepted)
            if claims:
                claimed.add(operation_id)
                assert accepted[0].action == "confirm"
        assert claimed, "the burst claimed nothing"

        async def executions_settled() -> bool:
            for operation_id in claimed:
                op = await store.get(operation_id)
                if op is None or op.state is not State.OUTCOME_OBSERVED:
                    return False
            return True

        await eventually(executions_settled, deadline_s=RECOVERY_DEADLINE_S * 2)
        async with await SimVenue.open(tmp_path / "venue.db", create=False) as venue:
            orders = await venue.orders()
        assert all(order.submit_count == 1 for order in orders), orders
        assert len({order.client_id for order in orders}) == len(orders)
        assert {order.client_id for order in orders} <= {client_id_for(op) for op in claimed}
        assert await second.terminate() == 0
