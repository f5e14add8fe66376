"""Hyperliquid's precision rules for perps, as exact Decimal arithmetic (no SDK, no I/O).

A perp price may have at most 5 significant figures and at most 6 - szDecimals decimals, but
an integer price is always allowed; a size may have at most szDecimals decimals
(reference/venues.md §1.4). Nothing here rounds a confirmed value to fit: `price_refusal`
and `size_refusal` say why a value does not fit, a market order's own price (the IOC limit
at the confirmed slippage bound) is `venues.pricing.bounded_market_price`, always inside it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Final

PERP_MAX_DECIMALS: Final = 6
SIG_FIGS: Final = 5
MIN_NOTIONAL: Final = Decimal(10)  # "Order must have minimum value of $10." (the venue checks)


def decimals_of(value: Decimal) -> int:
    """How many digits `value` has after the point, trailing zeros ignored."""
    exponent = value.normalize().as_tuple().exponent
    assert isinstance(exponent, int)  # finite values only reach here
    return max(0, -exponent)


def significant_figures(value: Decimal) -> int:
    if value == 0:
        return 0
    return len(value.normalize().as_tuple().digits)


def price_decimals(sz_decimals: int) -> int:
    return max(0, PERP_MAX_DECIMALS - sz_decimals)


def tick(sz_decimals: int) -> Decimal:
    """The finest price step the decimals rule allows (the 5 figures may be coarser)."""
    return Decimal(1).scaleb(-price_decimals(sz_decimals))


def lot(sz_decimals: int) -> Decimal:
    return Decimal(1).scaleb(-sz_decimals)


def price_refusal(name: str, price: Decimal, sz_decimals: int) -> str | None:
    """Why `price` is not a valid perp price (None: it is)."""
    if price <= 0:
        return f"{name} {price} must be greater than zero"
    if price == price.to_integral_value():
        return None  # integers are always allowed, however many figures
    if significant_figures(price) > SIG_FIGS:
        return (
            f"{name} {price} has more than {SIG_FIGS} significant figures, which Hyperliquid "
            "refuses (integers are always allowed); propose a new order with a valid price"
        )
    if decimals_of(price) > price_decimals(sz_decimals):
        return (
            f"{name} {price} has more than {price_decimals(sz_decimals)} decimals (6 minus the "
            f"coin's szDecimals {sz_decimals}); propose a new order with a valid price"
        )
    return None


def size_refusal(name: str, size: Decimal, sz_decimals: int) -> str | None:
    """Why `size` is not a valid size for a coin with `sz_decimals` (None: it is)."""
    if size <= 0:
        return f"{name} {size} must be greater than zero"
    if decimals_of(size) > sz_decimals:
        return (
            f"{name} {size} has more than {sz_decimals} decimals (the coin's szDecimals); "
            "propose a new order with a valid size"
        )
    return None
