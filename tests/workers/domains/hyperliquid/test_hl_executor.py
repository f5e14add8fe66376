"""The executor worker on the real store, with the Hyperliquid adapter on the hlsandbox:
a confirmed order is filled once with its fee; a dropped answer ends reconciled with one
order; a delayed request is fenced and ends `not_submitted`. The evidence is the store's own
(written before the request leaves, read back by the reconciler)."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from hlsandbox.testing import RunningSandbox
from store import Claimed, Click, ExecutionLedger, Operation, Store, World
from tests.support.driving import drive, statuses
from tests.support.factories import draft
from workers.domains.execution import client_id_for
from workers.domains.finance.hyperliquid.signer import AgentKey
from workers.domains.finance.hyperliquid.venue import HlAccount, HyperliquidVenue
from workers.domains.finance.hyperliquid.wire import cloid_of
from workers.domains.finance.runner import FinanceRunner
from workers.domains.finance.settings import FinanceAccount, FinanceSettings
from workers.executor import ExecutionWorker

PAYLOAD: dict[str, Any] = {
    "venue": "hyperliquid",
    "account": "hl-main",
    "instrument": "BTC-PERP",
    "side": "buy",
    "quantity": "0.001",
    "order_type": "limit",
    "limit_price": "60100",
    "time_in_force": "GTC",
    "reduce_only": False,
    "leverage": "20",
    "max_fee": "1",
    "fee_currency": "USDC",
}


async def claimed(store: Store) -> Operation:
    proposed = await store.propose(
        draft(
            executor_name="hyperliquid",
            simulated=True,  # the emulator never leaves this machine
            world=World.EMULATOR,
            payload=dict(PAYLOAD),
            target_ref="account:hyperliquid/hl-main",
        )
    )
    op = await store.mark_card_sent(proposed.operation.id, f"om_{proposed.operation.id}")
    result = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(result, Claimed)
    return result.operation


def worker_for(
    store: Store, venue: HyperliquidVenue, hl_wallets: Any, not_found_after_s: float = 4.0
) -> ExecutionWorker:
    ledger = ExecutionLedger(store)
    settings = FinanceSettings(
        accounts=[
            FinanceAccount(
                name="hl-main",
                venue="hyperliquid",
                budget="100000",
                address=hl_wallets.address,
                agent_key_env="HL_TEST_AGENT_KEY",
            )
        ]
    )
    runner = FinanceRunner(
        {"hyperliquid": venue},
        settings,
        clock=store.clock,
        record_evidence=ledger.record_evidence,
        evidence_of=ledger.evidence,
    )
    return ExecutionWorker(
        store,
        {runner.kind: runner},
        submit_timeout_s=5.0,
        not_found_after_s=not_found_after_s,
        track_max_s=1.0,
    )


async def test_a_confirmed_order_fills_once_with_its_fee(
    store: Store, hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, hl_wallets: Any
) -> None:
    op = await claimed(store)
    worker = worker_for(store, hl_venue, hl_wallets)
    read = statuses(store, op)

    async def filled() -> bool:
        return (await read())[-1:] == ["filled"]

    await drive(worker, filled, deadline_s=30)
    [outcome] = await ExecutionLedger(store).outcomes(op.id)
    assert outcome.detail["world"] == "emulator" and outcome.detail["venue"] == "hyperliquid"
    assert (outcome.detail["fees"], outcome.detail["fee_currency"]) == ("0.027", "USDC")
    evidence = await ExecutionLedger(store).evidence(client_id_for(op.id))
    assert evidence is not None and evidence["cloids"][client_id_for(op.id)] == cloid_of(
        client_id_for(op.id)
    )
    assert await hl_sandbox.committed(cloid_of(client_id_for(op.id))) == 1


async def test_a_dropped_answer_is_reconciled_to_the_one_order(
    store: Store, hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, hl_wallets: Any
) -> None:
    op = await claimed(store)
    await hl_sandbox.fault("drop_answer", close=True)
    worker = worker_for(store, hl_venue, hl_wallets)
    read = statuses(store, op)

    async def reconciled() -> bool:
        return (await read())[-1:] == ["filled"]

    await drive(worker, reconciled, deadline_s=30)
    assert await read() == ["unknown", "filled"]
    cloid = cloid_of(client_id_for(op.id))
    assert (await hl_sandbox.requests_seen(cloid), await hl_sandbox.committed(cloid)) == (1, 1)


async def test_a_delayed_request_is_fenced_and_ends_not_submitted(
    store: Store, hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, hl_wallets: Any
) -> None:
    op = await claimed(store)
    await hl_sandbox.fault("delay_commit", delay_ms=None)
    worker = worker_for(store, hl_venue, hl_wallets)
    read = statuses(store, op)

    async def settled() -> bool:
        return (await read())[-1:] == ["not_submitted"]

    await drive(worker, settled, deadline_s=30)
    assert await read() == ["unknown", "not_submitted"]
    [_unknown, fenced] = await ExecutionLedger(store).outcomes(op.id)
    assert "fenced" in fenced.detail["reason"]
    assert await hl_sandbox.release() == 1
    cloid = cloid_of(client_id_for(op.id))
    assert (await hl_sandbox.requests_seen(cloid), await hl_sandbox.committed(cloid)) == (1, 0)


async def test_a_request_that_may_still_land_stays_unknown_past_the_not_found_delay(
    store: Store, hl_venue: HyperliquidVenue, hl_sandbox: RunningSandbox, hl_wallets: Any
) -> None:
    # the executor's not-found delay (0.5 s) is far shorter than the request's expiresAfter
    # (30 s): while the request may still land, the adapter must keep it unknown, never
    # let the executor call it "not received"
    op = await claimed(store)
    await hl_sandbox.fault("delay_commit", delay_ms=None)  # held: it may land any time
    worker = worker_for(store, hl_venue, hl_wallets, not_found_after_s=0.5)
    read = statuses(store, op)

    async def unknown() -> bool:
        return await read() == ["unknown"]

    await drive(worker, unknown, deadline_s=30)
    # the key is rotated: the request's nonce can no longer be fenced by this process
    old = hl_venue._accounts["hl-main"]
    other = AgentKey("0x" + hashlib.sha256(b"rotated test agent").hexdigest())
    hl_venue._accounts["hl-main"] = HlAccount(old.name, old.address, other)
    past = store.clock() + timedelta(seconds=1)
    reads_before = hl_venue._transport.reads.sent

    async def looked_again_after_the_delay() -> bool:
        return store.clock() > past and hl_venue._transport.reads.sent >= reads_before + 2

    await drive(worker, looked_again_after_the_delay, deadline_s=30)
    assert await read() == ["unknown"]  # still unknown: never "not received" while it may land

    await hl_sandbox.advance(35_000 + 30_000)  # past expiresAfter and its margin

    async def settled() -> bool:
        return (await read())[-1:] == ["not_submitted"]

    await drive(worker, settled, deadline_s=30)
    [_unknown, never] = await ExecutionLedger(store).outcomes(op.id)
    assert "expiresAfter has passed" in never.detail["reason"]
    await hl_sandbox.release()  # the held request arrives late: refused, it expired
    assert await hl_sandbox.committed(cloid_of(client_id_for(op.id))) == 0
