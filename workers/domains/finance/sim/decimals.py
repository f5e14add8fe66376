"""Exact decimal arithmetic and plain notation, shared by every part of the simulated venue.

No float ever touches a price, a quantity or a fee: values are `Decimal`, written in plain
notation (`format(d, "f")`) and read back with `Decimal(text)`. Matching runs under `EXACT`,
whose context traps `Inexact`, so an addition or a multiplication that would have to round
raises instead of silently losing digits. Only averages divide, and they use `AVERAGE` (34
significant digits) explicitly.
"""

from __future__ import annotations

from decimal import Context, Decimal, DivisionByZero, Inexact, InvalidOperation, Overflow
from typing import Final

# Exact arithmetic: anything that would round raises decimal.Inexact.
EXACT = Context(prec=200, traps=[Inexact, InvalidOperation, DivisionByZero, Overflow])
# The one place that divides (average prices): 34 significant digits, half-even.
AVERAGE = Context(prec=34, traps=[InvalidOperation, DivisionByZero, Overflow])
BPS: Final = Decimal(10000)  # basis points in one


def text(value: Decimal) -> str:
    """Plain decimal notation, never an exponent: Decimal('6E+4') -> '60000'."""
    return format(value, "f")


def plain(value: Decimal) -> Decimal:
    """The same value without trailing zeros (and never an exponent above zero)."""
    if value == 0:
        return Decimal(0)
    reduced = value.normalize(EXACT)
    if reduced.as_tuple().exponent > 0:  # type: ignore[operator]
        reduced = reduced.quantize(Decimal(1), context=EXACT)
    return reduced


def opt_text(value: Decimal | None) -> str | None:
    return None if value is None else text(value)


def dec(value: str) -> Decimal:
    return Decimal(value)


def opt_dec(value: str | None) -> Decimal | None:
    return None if value is None else Decimal(value)


def require_decimal(name: str, value: object) -> Decimal:
    """A finite Decimal, or a TypeError/ValueError naming the field (floats are refused)."""
    if not isinstance(value, Decimal):
        raise TypeError(f"{name} must be a decimal.Decimal, not {type(value).__name__}")
    if not value.is_finite():
        raise ValueError(f"{name} must be a finite decimal, not {value}")
    return value
