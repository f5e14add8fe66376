"""finance.order's terms: its payload (schema version 1), the kind and the executors it binds.

The `Domain` that plugs the kind in (settings, runner, checks, words) is `domain.py`; every
module of the package may import this one, and this one imports none of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, StringConstraints

from store import World
from workers.domains.cross_field import CrossChecked, CrossProblem
from workers.domains.types import Name, NonNegativeDecimal, PositiveDecimal

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


class Protective(CrossChecked):
    stop_loss: PositiveDecimal | None = None
    take_profit: PositiveDecimal | None = None

    @classmethod
    def cross_problems(cls, data: Mapping[str, Any]) -> list[CrossProblem]:
        if data.get("stop_loss") is None and data.get("take_profit") is None:
            return [
                CrossProblem(
                    None,
                    "protective needs stop_loss, take_profit or both",
                    "add stop_loss or take_profit, or leave protective out",
                )
            ]
        return []


class FinanceOrderV1(CrossChecked):
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

    @classmethod
    def cross_problems(cls, data: Mapping[str, Any]) -> list[CrossProblem]:
        """The price terms an order type needs, each named at its own field (an order type
        that is neither limit nor market is its field's problem alone)."""
        order_type = data.get("order_type")
        problems = [
            CrossProblem(field, reason, fix)
            for of_type, field, needed, reason, fix in PRICE_TERMS
            if order_type == of_type and (data.get(field) is not None) != needed
        ]
        if order_type == "market" and data.get("time_in_force") == "POST_ONLY":
            problems.append(
                CrossProblem(
                    "time_in_force",
                    "POST_ONLY needs a limit order",
                    "use GTC, IOC or FOK, or order_type limit",
                )
            )
        return problems


# order type, field, whether that type needs it (or must leave it out), reason, fix
PRICE_TERMS = (
    (
        "limit",
        "limit_price",
        True,
        "a limit order needs limit_price",
        "add limit_price or use order_type market",
    ),
    (
        "limit",
        "max_slippage_bps",
        False,
        "max_slippage_bps is for market orders",
        "remove max_slippage_bps or use order_type market",
    ),
    (
        "market",
        "max_slippage_bps",
        True,
        "a market order needs max_slippage_bps (its slippage bound)",
        'add max_slippage_bps (basis points, e.g. "50") or use order_type limit',
    ),
    (
        "market",
        "limit_price",
        False,
        "limit_price is for limit orders",
        "remove limit_price or use order_type limit",
    ),
)


# Each venue's executor, bound into its orders' digests (venues' profiles declare the same;
# a test holds them equal). Known here without opening a venue: filing never needs one open.
EXECUTORS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {"sim": ("sim-venue", "1"), "hyperliquid": ("hyperliquid", "1")}
)
NETWORK_WORLDS: Mapping[str, World] = MappingProxyType(
    {"emulator": World.EMULATOR, "testnet": World.TESTNET, "mainnet": World.LIVE}
)
