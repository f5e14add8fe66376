"""What the simulated venue is: its name, what it declares (`PROFILE`), and what a new venue
file is seeded with (instruments, accounts). Only the simulated venue reads these; another
venue declares its own (venues/contract.py)."""

from __future__ import annotations

from decimal import Decimal
from typing import Final

from store import World
from workers.domains.finance.venues.contract import Profile
from workers.domains.finance.venues.model import ORDER_TYPES, TIME_IN_FORCE, Instrument

VENUE_NAME: Final = "sim"
EXECUTOR_NAME: Final = "sim-venue"  # bound into each sim order's digest with its revision
EXECUTOR_REVISION: Final = "1"
WORLD: Final = World.SIMULATED
ACCOUNT_MODE: Final = "one_way"
DEFAULT_ACCOUNTS: Final = ("sim-main",)
DEFAULT_INSTRUMENTS: Final = (
    Instrument("BTC-PERP", Decimal("0.5"), Decimal("0.001"), Decimal("0.001"), Decimal("60000")),
    Instrument("ETH-PERP", Decimal("0.05"), Decimal("0.01"), Decimal("0.01"), Decimal("3000")),
)

PROFILE: Final = Profile(
    name=VENUE_NAME,
    executor_name=EXECUTOR_NAME,
    executor_revision=EXECUTOR_REVISION,
    products=frozenset({"perp"}),
    order_types=frozenset(ORDER_TYPES),
    time_in_force=frozenset(TIME_IN_FORCE),
    protective=True,
    reduce_only=True,
    account_modes=frozenset({ACCOUNT_MODE}),
    precision="a tick for prices and a lot for quantities, per instrument",
    minimum="a minimum quantity per instrument",
    fees="maker and taker rates per instrument, charged on each fill; under the "
    "'fees_unknown' fault a fill reports its fee as unknown, never zero",
    authentication="none: it lives in its own file beside the bot",
    client_ids="our client id itself (cs-<operation id>; children :sl and :tp)",
    reconciliation="lookup by client id against the venue's own durable file; an answer "
    "lost after the commit is found there",
    notes=(
        "SIMULATED: nothing reaches a real exchange",
        "a market order fills at the mark, within its slippage bound",
    ),
)
