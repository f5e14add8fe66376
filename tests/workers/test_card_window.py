"""The card worker keeps several Lark calls in flight, but one at a time per card: a newer
version leased while an older one is still being patched waits for it, so a card never ends
on the older version. Real store, real sandbox, the real Lark client with a gate in front."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import update

from bot.app.workforce import RetryingLark
from bot.lark.api import LarkApi
from store import Claimed, Click, OperationRow, Store
from tests.support.factories import draft
from tests.support.sandbox import Sandbox
from tests.support.waiting import eventually
from workers.cards import CardWorker


class GatedLark:
    """The real Lark client; patches wait at a gate while `hold` is set, and calls in flight
    are counted per card."""

    def __init__(self, lark: RetryingLark) -> None:
        self.lark = lark
        self.hold = False
        self.gate = asyncio.Event()
        self.at_gate = asyncio.Event()
        self.in_flight: dict[str, int] = {}
        self.most_at_once = 0
        self.patched: list[str] = []

    async def send_card(self, chat_id: str, card: dict[str, Any], uuid: str) -> str:
        return await self.lark.send_card(chat_id, card, uuid)

    async def patch_card(self, message_id: str, card: dict[str, Any]) -> None:
        self.in_flight[message_id] = self.in_flight.get(message_id, 0) + 1
        self.most_at_once = max(self.most_at_once, self.in_flight[message_id])
        try:
            if self.hold:
                self.at_gate.set()
                await self.gate.wait()
            await self.lark.patch_card(message_id, card)
            self.patched.append(message_id)
        finally:
            self.in_flight[message_id] -= 1


@pytest.fixture
async def lark(sandbox: Sandbox) -> AsyncIterator[GatedLark]:
    api = LarkApi(sandbox.app.app_id, sandbox.app.app_secret, sandbox.base_url, timeout_s=5)
    yield GatedLark(RetryingLark(api))
    await api.close()


async def test_a_newer_version_waits_for_the_call_still_patching_its_card(
    store: Store, lark: GatedLark
) -> None:
    worker = CardWorker(store, lark, poll_s=3600)  # moved only by kicks and finishing calls
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    try:
        op = (await store.propose(draft())).operation
        worker.kick()

        async def sent() -> bool:
            found = await store.get(op.id)
            return found is not None and found.card_message_id is not None

        await eventually(sent)
        lark.hold = True
        decided = await store.confirm_and_claim(
            Click(op.id, "confirm", op.confirm_digest, "ou_alice")
        )
        assert isinstance(decided, Claimed)
        # no callback answer showed the claim: its card is due now (the late-answer path)
        assert await worker.ledger.due_now(decided.operation)
        worker.kick()
        await asyncio.wait_for(lark.at_gate.wait(), 10)  # the claim's patch is in flight

        # something newer is due on the same card while that patch is held
        async with store.write() as conn:
            await conn.execute(
                update(OperationRow)
                .where(OperationRow.id == op.id)
                .values(card_due_at=store.clock())
            )
        worker.kick()

        async def queued_behind() -> bool:
            return sum(turn.waiting for turn in worker._per_card.values()) == 2

        await eventually(queued_behind)  # leased, and waiting for the held patch
        assert lark.most_at_once == 1
        lark.gate.set()

        message_id = decided.operation.card_message_id
        assert message_id is not None

        async def both_patched() -> bool:
            return lark.patched.count(message_id) == 2

        await eventually(both_patched)
        assert lark.most_at_once == 1, "two calls patched one card at once"

        async def forgotten() -> bool:  # once the second patch's mark is written
            return worker._per_card == {}

        await eventually(forgotten)  # finished cards are forgotten
    finally:
        stop.set()
        await asyncio.wait_for(running, 10)
