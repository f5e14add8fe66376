"""SIGKILL at each named crash point, then restart: nothing lost, nothing submitted twice.

A real `countersign run --config FILE` process (ws mode, against an in-process sandbox) is
started with COUNTERSIGN_CRASH_AT naming one point; Alice confirms; the process kills itself
there with SIGKILL. A second process on the same store and the same venue file must carry
the operation to its outcome on its own: the venue sees the client id at most once, the store
holds one claim and one attempt, and the original card shows the outcome. Every point but
`after_attempt` ends filled; a death after the attempt and `dispatching` committed but before
the request left is reconciled as never submitted (`NEVER_SENT`).

Each point runs on every venue: the simulated one (its file beside the config) and Hyperliquid
on an hlsandbox this test process serves (tests/support/venue_harness.py: the bot's config
names it as network "emulator", its account's agent key is in the bot's environment). On
Hyperliquid a death at `after_attempt` leaves no evidence of a request (it is recorded just
before the POST), so the lookup proves nothing left: not_submitted, and the card line says
EMULATOR where the sim's says SIMULATED.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from store import CardLedger, DeliveryLedger, ExecutionLedger, Store
from tests.support.backends import Backend
from tests.support.bot_processes import (
    CRASH_EXECUTION,
    RECOVERY_DEADLINE_S,
    BotProcess,
    Lark,
    api,
    bot_env,
    bot_processes,
    connected,
    first_bot,
    offer,
    sandbox_alone,
    write_config,
)
from tests.support.factories import order_request
from tests.support.processes import free_port
from tests.support.venue_harness import HyperliquidHarness, VenueHarness, open_harness
from tests.support.waiting import eventually
from workers.crash import ENV as CRASH_ENV
from workers.crash import POINTS
from workers.domains.execution import client_id_for
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.venues.contract import NeverLanded
from workers.webhook_signature import DELIVERY_HEADER

HL_REQUEST_TIMEOUT_S = 1.5


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("venue", ["sim", "hyperliquid"])
async def test_sigkill_at_a_crash_point_then_restart_finishes_once(
    venue: str, point: str, backend: Backend, store: Store, tmp_path: Path
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        # Hyperliquid: the sandbox outlives the bots (they are killed first)
        harness = await stack.enter_async_context(open_harness(venue, tmp_path))
        lark = await stack.enter_async_context(sandbox_alone())
        start = await stack.enter_async_context(bot_processes())
        on_hl = isinstance(harness, HyperliquidHarness)
        # the sim keeps the bot's own default finance table (its file is the harness's)
        finance: dict[str, Any] = {}
        execution = CRASH_EXECUTION
        if on_hl:
            table = harness.finance_table()
            # a first order reads the agent's role and the venue's meta before it signs: on a
            # busy machine 1 s is too short a wait for the points that must end "filled"
            table["hyperliquid"]["request_timeout_s"] = HL_REQUEST_TIMEOUT_S
            finance = {"domains": {"finance": table}}
            execution = {
                **CRASH_EXECUTION,
                "submit_timeout_s": 2 * HL_REQUEST_TIMEOUT_S,
                "not_found_after_s": 3 * HL_REQUEST_TIMEOUT_S,
            }
        config = write_config(
            tmp_path / "bot.toml",
            backend,
            lark.app,
            free_port(),
            "ws",
            execution=execution,
            environ=harness.environ(),
            **finance,
        )
        env = {**bot_env(lark.app), **harness.environ()}
        first = await start(config, {**env, CRASH_ENV: point})
        await eventually(lambda: connected(first), deadline_s=30)

        body = order_request(f"crash-{point}")
        body["payload"].pop("protective")  # one order, settled once filled
        if on_hl:
            body["payload"] = harness.payload()
        view, message_id = await offer(first, lark, store, body)
        click = asyncio.create_task(
            lark.control(
                "POST",
                f"/messages/{message_id}/click",
                {"operator": "ou_alice", "button": "confirm"},
            )
        )
        assert await asyncio.wait_for(first.process.wait(), 30) == -signal.SIGKILL
        await click  # answered, or timed out if the kill came before the answer
        assert await store.claim_count(view["id"]) == 1

        second = await start(config, env)
        ending = ENDINGS[point]
        if on_hl:
            ending = replace(ending, card_line=ending.card_line.replace("SIMULATED", "EMULATOR"))
            if ending.outcomes == FILLED.outcomes:
                # over HTTP a first answer can outlive the submit timeout on a busy machine:
                # then it is unknown and reconciled to the same one fill (the crash point's
                # promise, one order and nothing lost, is the same either way)
                ending = replace(ending, also=RECONCILED_FILLED.outcomes)
        await ends_once(second, lark, store, harness, view["id"], message_id, ending)
        assert await second.terminate() == 0


@dataclass(frozen=True)
class Ending:
    """How the restarted bot finishes an operation the first one died on."""

    status: str
    card_line: str
    reservation: str
    outcomes: list[tuple[str, str]]
    submitted: int  # how many times the venue saw the client id (never twice)
    also: list[tuple[str, str]] | None = None  # another outcome list that ends as truly


FILLED = Ending("filled", "Filled · SIMULATED", "converted", [("initial", "filled")], 1)
# died with the order on the venue and no answer read: unknown, then reconciled
RECONCILED_FILLED = Ending(
    "filled",
    "Reconciled: Filled · SIMULATED",
    "converted",
    [("initial", "unknown"), ("reconciled", "filled")],
    1,
)
# died after `begin_dispatch` committed (the attempt, its client id and `dispatching` in one
# write) and before the request left: the store cannot tell that from a death just after the
# request left, so it is unknown; the lookup finds nothing, and nothing is ever sent
NEVER_SENT = Ending(
    "not_submitted",
    "Reconciled: Not executed",
    "released",
    [("initial", "unknown"), ("reconciled", "not_submitted")],
    0,
)
ENDINGS = {
    **{point: FILLED for point in POINTS},
    "after_attempt": NEVER_SENT,
    "after_dispatch": RECONCILED_FILLED,
    "after_response": RECONCILED_FILLED,
}


async def ends_once(
    bot: BotProcess,
    lark: Lark,
    store: Store,
    harness: VenueHarness,
    operation_id: str,
    message_id: str,
    ending: Ending,
) -> None:
    async def concluded() -> bool:
        _status, fresh = await api(bot, "GET", f"/api/v1/operations/{operation_id}")
        return (fresh.get("outcome") or {}).get("status") == ending.status

    await eventually(concluded, deadline_s=RECOVERY_DEADLINE_S)
    await eventually(
        lambda: ending.card_line in lark.state.messages[message_id].content,
        deadline_s=RECOVERY_DEADLINE_S,
        woken_by=lark.state,
    )
    ledger = ExecutionLedger(store)

    async def reservation_settled() -> bool:
        return await ledger.reservation_state(operation_id) == ending.reservation

    await eventually(reservation_settled, deadline_s=RECOVERY_DEADLINE_S)

    client_id = client_id_for(operation_id)
    assert await harness.seen(client_id) == ending.submitted, "the venue saw it twice"
    assert await harness.placed(client_id) == ending.submitted
    try:
        found = await harness.venue.lookup(client_id, await ledger.evidence(client_id))
    except NeverLanded:  # proved never sent (Hyperliquid: no evidence, nothing left)
        found = None
    if ending.submitted:
        assert found is not None and found.status == ending.status
    else:
        assert found is None
    assert await store.claim_count(operation_id) == 1
    attempt = await ledger.attempt(operation_id)
    assert attempt is not None and attempt.client_id == client_id_for(operation_id)
    _status, final = await api(bot, "GET", f"/api/v1/operations/{operation_id}")
    statuses = [(o["stage"], o["status"]) for o in final["outcomes"]]
    assert statuses in (ending.outcomes, ending.also), statuses


async def test_card_patches_refused_across_a_restart_catch_up_without_re_execution(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    async with sandbox_alone() as lark, bot_processes() as start:
        config, env, first = await first_bot(start, lark, backend, tmp_path)
        body = order_request("patches-refused")
        body["payload"].pop("protective")
        view, message_id = await offer(first, lark, store, body)
        # From now on Lark refuses every patch of this card (server errors).
        status, _ = await lark.control(
            "POST", "/faults", {"fail_next_patches": 10_000, "fail_patch_code": 99991400}
        )
        assert status == 200
        _status, reply = await lark.control(
            "POST", f"/messages/{message_id}/click", {"operator": "ou_alice", "button": "confirm"}
        )
        assert reply["toast"]["type"] == "success"  # the answer itself carries the card

        async def filled_but_card_behind() -> bool:
            op = await store.get(view["id"])
            return op is not None and op.card_attempts >= 1 and op.card_version != op.version

        await eventually(filled_but_card_behind, deadline_s=30)
        assert "Filled" not in lark.state.messages[message_id].content
        assert await first.terminate() == 0

        status, _ = await lark.control("POST", "/faults", {"fail_next_patches": 0})
        assert status == 200
        second = await start(config, env)
        await eventually(
            lambda: "Filled · SIMULATED" in lark.state.messages[message_id].content,
            deadline_s=RECOVERY_DEADLINE_S,
            woken_by=lark.state,
        )
        ledger = ExecutionLedger(store)
        assert [o.status for o in await ledger.outcomes(view["id"])] == ["filled"]
        async with await SimVenue.open(tmp_path / "venue.db", create=False) as venue:
            [order] = await venue.orders()
        assert order.submit_count == 1

        async def card_current() -> bool:  # the patch landed; its record follows it
            op = await store.get(view["id"])
            return op is not None and op.card_version == op.version

        await eventually(card_current)
        history = await CardLedger(store).history(view["id"])
        trail = [(e.version, e.action, e.ok, e.code) for e in history]
        assert any(not entry.ok for entry in history) and history[-1].ok, trail
        assert await second.terminate() == 0


async def test_sigkill_before_the_webhooks_2xx_then_restart_redelivers_the_same_id(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    seen: list[str] = []
    answered: list[str] = []

    async def hook(request: web.Request) -> web.Response:
        seen.append(request.headers[DELIVERY_HEADER])
        if len(seen) == 1:
            await asyncio.sleep(60)  # the first delivery is in flight when the bot dies
        answered.append(request.headers[DELIVERY_HEADER])
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/hook", hook)
    receiver = TestServer(app, host="127.0.0.1")
    await receiver.start_server()
    try:
        async with sandbox_alone() as lark, bot_processes() as start:
            config = write_config(
                tmp_path / "bot.toml",
                backend,
                lark.app,
                free_port(),
                "ws",
                execution=CRASH_EXECUTION,
            )
            env = bot_env(lark.app)
            first = await start(config, env)
            await eventually(lambda: connected(first), deadline_s=30)
            body = order_request("webhook-crash")
            body["payload"].pop("protective")
            body["source"] = {
                "callback": {
                    "url": f"http://127.0.0.1:{receiver.port}/hook",
                    "secret_ref": "dev",
                }
            }
            view, message_id = await offer(first, lark, store, body)
            await lark.control(
                "POST",
                f"/messages/{message_id}/click",
                {"operator": "ou_alice", "button": "confirm"},
            )
            await eventually(lambda: _true(len(seen) == 1), deadline_s=20)
            assert await first.kill() == -signal.SIGKILL  # the outcome is in; no 2xx yet

            second = await start(config, env)
            await eventually(lambda: _true(bool(answered)), deadline_s=RECOVERY_DEADLINE_S)
            assert answered == [seen[0]], (seen, answered)  # the same delivery id, once more
            [delivery] = await DeliveryLedger(store).find(operation_id=view["id"])

            async def recorded() -> bool:
                found = await DeliveryLedger(store).get(delivery.id)
                return found is not None and found.state == "delivered"

            await eventually(recorded)
            outcomes = await ExecutionLedger(store).outcomes(view["id"])
            assert [o.status for o in outcomes] == ["filled"]  # never executed again
            async with await SimVenue.open(tmp_path / "venue.db", create=False) as venue:
                [order] = await venue.orders()
            assert order.submit_count == 1
            assert await second.terminate() == 0
    finally:
        await receiver.close()


async def _true(value: bool) -> bool:
    return value
