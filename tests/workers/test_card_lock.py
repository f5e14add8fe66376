"""A patch Lark refuses because the card is being clicked ("card action is lock") is retried
with backoff, not failed for good: the card ends on the newest version once the lock is gone.
Real store, real sandbox (held locked through its control API), the real Lark client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from bot.app.workforce import RetryingLark
from bot.lark.api import LarkApi
from store import CardLedger, Claimed, Click, Store
from tests.support.factories import draft
from tests.support.sandbox import Sandbox
from tests.support.waiting import eventually
from workers.cards import CardWorker


@pytest.fixture
async def lark(sandbox: Sandbox) -> AsyncIterator[RetryingLark]:
    api = LarkApi(sandbox.app.app_id, sandbox.app.app_secret, sandbox.base_url, timeout_s=5)
    yield RetryingLark(api)
    await api.close()


async def test_a_patch_refused_by_the_card_lock_is_retried_and_lands_after_it(
    store: Store, sandbox: Sandbox, lark: RetryingLark
) -> None:
    worker = CardWorker(store, lark, poll_s=0.05)
    ledger = CardLedger(store)
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    try:
        op = (await store.propose(draft())).operation
        worker.kick()

        async def sent() -> bool:
            found = await store.get(op.id)
            return found is not None and found.card_message_id is not None

        await eventually(sent)
        found = await store.get(op.id)
        assert found is not None and found.card_message_id is not None
        message_id = found.card_message_id
        # someone is clicking the card: until released, every patch is refused
        status, _ = await sandbox.control("POST", f"/messages/{message_id}/lock", {"hold": True})
        assert status == 200

        decided = await store.confirm_and_claim(
            Click(op.id, "confirm", op.confirm_digest, "ou_alice")
        )
        assert isinstance(decided, Claimed)
        assert await worker.ledger.due_now(decided.operation)
        worker.kick()

        async def refused_and_due_again() -> bool:
            history = await ledger.history(op.id)
            current = await store.get(op.id)
            return (
                any(not entry.ok and entry.code == 230099 for entry in history)
                and current is not None
                and current.card_due_at is not None
            )

        await eventually(refused_and_due_again, deadline_s=20)
        refusals = sandbox.state.patch_refusals[message_id]
        assert {r["code"] for r in refusals} == {230099}
        assert all("card action is lock" in r["msg"] for r in refusals)
        assert len(refusals) >= 2, "retried within the call, with backoff"
        current = await store.get(op.id)
        assert current is not None and current.card_error is None, "not failed for good"

        await sandbox.control("POST", f"/messages/{message_id}/lock", {"hold": False})

        async def landed() -> bool:
            history = await ledger.history(op.id)
            return any(entry.ok and entry.action == "patch" for entry in history)

        await eventually(landed, deadline_s=20)
        final = await store.get(op.id)
        assert final is not None and final.card_error is None
        assert final.card_version == final.version, "the card shows the newest version"
        assert [rev.source for rev in sandbox.state.messages[message_id].history] == [
            "create",
            "patch",
        ]
    finally:
        stop.set()
        await asyncio.wait_for(running, 10)
