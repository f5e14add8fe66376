"""Decimal rules of Hyperliquid's wire: strings for every price and size, tick and lot checks.

Prices: at most 5 significant figures and at most 6 - szDecimals decimals (perps), an integer
price always allowed; sizes: at most szDecimals decimals (venues.md §1.4).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

MAX_PERP_DECIMALS = 6
MAX_SIGNIFICANT_FIGURES = 5
# Hyperliquid reports USDC amounts (fees, pnl, balances) to 6 decimals
USDC_QUANTUM = Decimal("0.000001")


class WireError(ValueError):
    """A body that is not the expected shape: Hyperliquid answers HTTP 422."""


def parse_decimal(value: object, field: str) -> Decimal:
    """A wire decimal: a string (as the SDK sends) or an integer; anything else is malformed."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise WireError(f"{field}: expected a decimal string, got {value!r}")
    try:
        parsed = Decimal(value)
    except InvalidOperation as error:
        raise WireError(f"{field}: {value!r} is not a decimal") from error
    if not parsed.is_finite():
        raise WireError(f"{field}: {value!r} is not a finite decimal")
    return parsed


def wire(value: Decimal) -> str:
    """The string Hyperliquid shows: no exponent, no trailing zeros, never "-0"."""
    text = "0" if value == 0 else f"{value.normalize():f}"
    # as recorded from the venue: an integral value still shows one decimal ("26951.0")
    return text if "." in text else f"{text}.0"


def usdc(value: Decimal) -> Decimal:
    return value.quantize(USDC_QUANTUM)


def decimals_of(value: Decimal) -> int:
    exponent = value.normalize().as_tuple().exponent
    assert isinstance(exponent, int)
    return max(0, -exponent)


def price_ok(px: Decimal, sz_decimals: int) -> bool:
    if px <= 0:
        return False
    if px == px.to_integral_value():
        return True  # "integer prices are always allowed"
    if decimals_of(px) > MAX_PERP_DECIMALS - sz_decimals:
        return False
    return len(px.normalize().as_tuple().digits) <= MAX_SIGNIFICANT_FIGURES


def size_ok(sz: Decimal, sz_decimals: int) -> bool:
    return sz > 0 and decimals_of(sz) <= sz_decimals
