"""finance.order in `countersign demo`: a simulated venue under the demo's directory, five
orders (one fills, one rests and then fills in parts as the mark moves, one the preflight
refuses once confirmed, a large one two of three operators confirm, one the operator rejects
with a reason), and the hand that moves the mark once an order rests.

`demo --venue hyperliquid` tells the same story on the local Hyperliquid (hlsandbox): the
same orders on an account there (`hyperliquid_setup`); the dev wiring (bot/app/devstack.py)
starts the emulator and brings the hand that moves its mark, as only it may reach it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from workers.domains.base import DemoDecision, DemoSetup, Example
from workers.domains.execution import Background
from workers.domains.finance.examples import LIMIT_BUY
from workers.domains.finance.sim.venue import SimVenue

# a crossed resting order fills 30% per venue tick: resting -> partially filled -> filled
DEMO_FAULTS = "partial_fill=0.3"
RESTING_MARK = Decimal("58900")  # below the resting buy's 59000 limit
RESTING_SHOWN_S = 4.0  # how long an order rests (and its card says so) before the mark moves
LOOK_EVERY_S = 0.2


def order_payload(**changes: Any) -> dict[str, Any]:
    """A limit buy of 0.010 BTC-PERP at the default mark (it fills at once), with `changes`."""
    return {**LIMIT_BUY, **changes}


PROPOSALS = (
    Example("fills", "fills at once", order_payload(protective={"stop_loss": "57000"})),
    Example("rests then fills in parts", "rests, then fills", order_payload(limit_price="59000")),
    # Terms the venue could never take are refused at filing (no card); what the preflight
    # refuses after the claim is what only the claim can know: here, a reduce-only sell
    # larger than the position it would reduce (at most 0.020).
    Example(
        "preflight refuses",
        "refused after the claim",
        order_payload(side="sell", quantity="0.100", reduce_only=True, max_fee="3.5"),
    ),
    # above LARGE_ORDER_RULE's amount: two of Alice, Bob and Carol must confirm
    Example(
        "two of three",
        "a large order two operators confirm",
        order_payload(quantity="0.900", max_fee="30"),
    ),
    Example(
        "rejected with a reason",
        "an order the operator rejects, saying why",
        order_payload(limit_price="61000"),
    ),
)
LARGE_ORDER_RULE: Mapping[str, object] = {
    "name": "large-orders",
    "kinds": ["finance.order"],
    "above": "50000",
    "currency": "USDC",
    "required_confirmations": 2,  # of the ops audience's three operators
}
REJECT_REASON = "Price is above the mark: propose again at 60,000"
DECISIONS = {
    "two of three": (DemoDecision("ou_alice"), DemoDecision("ou_carol")),
    "rejected with a reason": (DemoDecision("ou_alice", "reject", REJECT_REASON),),
}
EXPECT = {
    "fills": ("Filled · SIMULATED",),
    "rests then fills in parts": (
        "Resting on the book · SIMULATED",
        "Partially filled · SIMULATED",
        "Filled · SIMULATED",
    ),
    "preflight refuses": ("Refused by pre-check — nothing sent · SIMULATED",),
    "two of three": ("Filled · SIMULATED",),
    "rejected with a reason": (f"Reason: {REJECT_REASON}",),
}


HL_ACCOUNT = "hl-main"
# the variable the demo account names for its agent key (the key is never in the table)
HL_AGENT_KEY_ENV = "COUNTERSIGN_DEMO_HL_AGENT_KEY"
HL_BUDGET = "100000"
HL_LEVERAGE = "20"  # Hyperliquid's default for a new account on BTC (cross)
HL_POLL_S = 0.5  # working orders are read this often: the card shows each partial fill
EXPECT_EMULATOR = {
    name: tuple(phrase.replace("· SIMULATED", "· EMULATOR") for phrase in phrases)
    for name, phrases in EXPECT.items()
}


def hyperliquid_table(
    data_dir: Path, url: str, address: str, others: Sequence[Mapping[str, object]] = ()
) -> dict[str, object]:
    """[domains.finance] with an account on the emulator at `url` (network "emulator"),
    after the `others` accounts (the dev profile's simulated one)."""
    account = {
        "name": HL_ACCOUNT,
        "venue": "hyperliquid",
        "budget": HL_BUDGET,
        "currency": "USDC",
        "address": address,
        "agent_key_env": HL_AGENT_KEY_ENV,
    }
    return {
        "enabled": True,
        "venue_path": str((data_dir / "sim-venue.db").resolve()),
        "accounts": [*others, account],
        "hyperliquid": {"network": "emulator", "url": url, "poll_s": HL_POLL_S},
    }


def hyperliquid_setup(
    workdir: Path, url: str, address: str, agent_key: str, hand: Background | None
) -> DemoSetup:
    """The demo's orders on the emulator's account `address`, whose agent signs with
    `agent_key` (handed to the bot in HL_AGENT_KEY_ENV only); `hand` moves the mark."""
    # the leverage the emulator sets for an account (countersign never changes it)
    on_hl = {"venue": "hyperliquid", "account": HL_ACCOUNT, "leverage": HL_LEVERAGE}
    return DemoSetup(
        table=hyperliquid_table(workdir, url, address),
        background=() if hand is None else (hand,),
        proposals=tuple(replace(p, payload={**p.payload, **on_hl}) for p in PROPOSALS),
        expect=EXPECT_EMULATOR,
        environ={HL_AGENT_KEY_ENV: agent_key},
        decisions=DECISIONS,
        approval_rules=(LARGE_ORDER_RULE,),
    )


def dev_table(data_dir: Path) -> dict[str, object]:
    """The dev profile's (and config.example.toml's) account on a venue under `data_dir`."""
    return {
        "enabled": True,
        "venue_path": str((data_dir / "sim-venue.db").resolve()),
        "accounts": [{"name": "sim-main", "venue": "sim", "budget": "100000", "currency": "USDC"}],
    }


def demo_setup(workdir: Path) -> DemoSetup:
    path = (workdir / "sim-venue.db").resolve()
    return DemoSetup(
        table={**dev_table(workdir), "sim_faults": DEMO_FAULTS},
        background=(lambda stop: move_mark_once_resting(path, stop),),
        proposals=PROPOSALS,
        expect=EXPECT,
        decisions=DECISIONS,
        approval_rules=(LARGE_ORDER_RULE,),
    )


async def move_mark_once_resting(path: Path, stop: asyncio.Event) -> None:
    """Once an order has rested a while (long enough for its card to say so), move the mark
    through its limit, so it fills in parts over the next ticks; then stop."""
    venue = await _opened(path, stop)
    if venue is None:
        return
    async with venue:
        earlier = {order.client_id for order in await venue.orders()}  # a previous run's
        while not await _wait(stop, LOOK_EVERY_S):
            orders = await venue.orders()
            if any(o.status == "resting" and o.client_id not in earlier for o in orders):
                if not await _wait(stop, RESTING_SHOWN_S):
                    await venue.set_mark("BTC-PERP", RESTING_MARK)
                return


async def _opened(path: Path, stop: asyncio.Event) -> SimVenue | None:
    """The venue the bot's workers create at start (None: stopped before it existed)."""
    while True:
        with contextlib.suppress(FileNotFoundError):
            return await SimVenue.open(path, create=False)
        if await _wait(stop, LOOK_EVERY_S):
            return None


async def _wait(stop: asyncio.Event, seconds: float) -> bool:
    """Wait `seconds`; True if `stop` was set meanwhile."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
    return stop.is_set()
