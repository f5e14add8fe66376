"""finance.order's terms: its payload (schema version 1), the kind and the executors it binds.

The `Domain` that plugs the kind in (settings, runner, checks, words) is `domain.py`; every
module of the package may import this one, and this one imports none of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, StringConstraints, model_validator

from store import World
from workers.domains.types import Name, NonNegativeDecimal, PositiveDecimal, StrictModel

KIND = "finance.order"
# the kind's own executor (the simulated venue's); a venue's order binds its own (EXECUTORS)
EXECUTOR_NAME = "sim-venue"
EXECUTOR_REVISION = "1"

Instrument = Annotated[str, StringConstraints(pattern=r"^[A-Z0-9]{1,20}(-[A-Z0-9]{1,20}){0,3}$")]
Currency = Annotated[str, StringConstraints(pattern=r"^[A-Z0-9]{2,12}$")]
MAX_SLIPPAGE_BPS = Decimal(10_000)  # 100 %: a market sell bounded further would fill at <= 0
# The largest worst-case notional an order may have (in its account's currency): far above
# any budget, and small enough that its amounts print and store exactly (Amount.text).
MAX_NOTIONAL = Decimal(10) ** 18


def _within_slippage_bound(value: str) -> str:
    if Decimal(value) > MAX_SLIPPAGE_BPS:
        raise ValueError(f"is above {MAX_SLIPPAGE_BPS} (100 %); send a bound of at most 10000")
    return value


SlippageBps = Annotated[NonNegativeDecimal, AfterValidator(_within_slippage_bound)]


class Protective(StrictModel):
    stop_loss: PositiveDecimal | None = None
    take_profit: PositiveDecimal | None = None

    @model_validator(mode="after")
    def _at_least_one(self) -> Self:
        if self.stop_loss is None and self.take_profit is None:
            raise ValueError("protective needs stop_loss, take_profit or both; or leave it out")
        return self


class FinanceOrderV1(StrictModel):
    venue: Name
    account: Name
    instrument: Instrument
    side: Literal["buy", "sell"]
    quantity: PositiveDecimal
    order_type: Literal["limit", "market"]
    limit_price: PositiveDecimal | None = None
    max_slippage_bps: SlippageBps | None = None
    time_in_force: Literal["GTC", "IOC", "FOK", "POST_ONLY"]
    reduce_only: bool = False
    leverage: PositiveDecimal
    max_fee: NonNegativeDecimal
    fee_currency: Currency
    protective: Protective | None = None

    @model_validator(mode="after")
    def _price_matches_type(self) -> Self:
        if self.order_type == "limit":
            if self.limit_price is None:
                raise ValueError("a limit order needs limit_price")
            if self.max_slippage_bps is not None:
                raise ValueError("max_slippage_bps is for market orders; remove it or use market")
        else:
            if self.max_slippage_bps is None:
                raise ValueError("a market order needs max_slippage_bps (its slippage bound)")
            if self.limit_price is not None:
                raise ValueError("limit_price is for limit orders; remove it or use limit")
            if self.time_in_force == "POST_ONLY":
                raise ValueError("POST_ONLY needs a limit order")
        return self


# Each venue's executor, bound into its orders' digests (venues' profiles declare the same;
# a test holds them equal). Known here without opening a venue: filing never needs one open.
EXECUTORS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {"sim": ("sim-venue", "1"), "hyperliquid": ("hyperliquid", "1")}
)
NETWORK_WORLDS: Mapping[str, World] = MappingProxyType(
    {"emulator": World.EMULATOR, "testnet": World.TESTNET, "mainnet": World.LIVE}
)
