"""Fault injection for the simulated venue: the settings, their parsing, and what each decides.

`Faults` is what an operator or a test sets (`Faults(...)`, the config's `sim_faults`, or
`COUNTERSIGN_SIM_FAULTS="reject,timeout,lose_response,latency_ms=200"`); its methods are
the pure decisions matching asks of it (a rejection, a slipped market price, a partial
fill's size, a fee or none). The call-level faults (`timeout`, `lose_response`,
`latency_ms`) are carried out by `venue.SimVenue`, which alone waits and raises.

Faults apply to `submit`, except `latency_ms` (submit, lookup, observe, cancel),
`incomplete` (observe), `partial_fill` (tick) and `fees_unknown` (every fill).
If several are set, `timeout` and `fence` win over the others, and a duplicate client id is
answered with the stored order before `reject` is looked at.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Final, Literal

from workers.domains.finance.sim.decimals import BPS, plain, require_decimal, text
from workers.domains.finance.sim.errors import FaultsError
from workers.domains.finance.venues.model import Instrument

FAULTS_ENV: Final = "COUNTERSIGN_SIM_FAULTS"

Fault = Literal[
    "reject",
    "timeout",
    "lose_response",
    "latency_ms",
    "partial_fill",
    "slippage_bps",
    "incomplete",
    "fees_unknown",
    "fence",
]
_FLAG_FAULTS: Final = (
    "reject",
    "timeout",
    "lose_response",
    "incomplete",
    "fees_unknown",
    "fence",
)
_VALUE_FAULTS: Final = {
    "latency_ms": "latency_ms=N (whole milliseconds, 0..600000)",
    "partial_fill": "partial_fill=F (fraction of the order per tick, 0 < F <= 1)",
    "slippage_bps": "slippage_bps=B (basis points, >= 0)",
}
_FAULT_HELP: Final = ", ".join((*_FLAG_FAULTS, *_VALUE_FAULTS.values()))


@dataclass(frozen=True)
class Faults:
    """Faults injected into the simulated venue.

    reject         submit stores the order as rejected ("simulated fault: reject")
    timeout        submit raises VenueTimeout before anything is stored
    lose_response  submit stores (and matches) the order, then raises VenueResponseLost
    latency_ms     submit/lookup/observe/cancel sleep this long after the work, before answering
    partial_fill   each tick fills this fraction of a crossed resting order (>= 1 lot)
    slippage_bps   market orders fill this many bps worse than the mark (on the tick)
    incomplete     observe() answers complete=False and leaves out open orders
    fees_unknown   fills record no fee: fees are reported as None (unknown), never 0
    fence          submit times out before anything is stored, saying so in its evidence;
                   lookup then proves it never lands (NeverLanded), as a real venue's
                   fenced nonce does: the sim never stores a request late
    """

    reject: bool = False
    timeout: bool = False
    lose_response: bool = False
    latency_ms: int = 0
    partial_fill: Decimal | None = None
    slippage_bps: Decimal | None = None
    incomplete: bool = False
    fees_unknown: bool = False
    fence: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.latency_ms <= 600_000:
            raise FaultsError(f"latency_ms={self.latency_ms}: use {_VALUE_FAULTS['latency_ms']}")
        if self.partial_fill is not None:
            frac = require_decimal("partial_fill", self.partial_fill)
            if not 0 < frac <= 1:
                raise FaultsError(f"partial_fill={frac}: use {_VALUE_FAULTS['partial_fill']}")
        if self.slippage_bps is not None:
            bps = require_decimal("slippage_bps", self.slippage_bps)
            if bps < 0:
                raise FaultsError(f"slippage_bps={bps}: use {_VALUE_FAULTS['slippage_bps']}")

    @classmethod
    def parse(cls, spec: str) -> Faults:
        """Parse `"reject,timeout,lose_response,latency_ms=200"`; blank means no faults."""
        if not spec.strip():
            return cls()
        values: dict[str, Any] = {}
        for number, raw in enumerate(spec.split(","), start=1):
            item = raw.strip()
            if not item:
                raise FaultsError(
                    f"fault item {number} is empty in {spec!r}; separate faults with single commas"
                )
            name, has_value, value = (part.strip() for part in item.partition("="))
            if name in values:
                raise FaultsError(f"fault item {item!r} repeats {name!r}; give each fault once")
            if name in _FLAG_FAULTS:
                if has_value:
                    raise FaultsError(f"fault item {item!r}: {name!r} takes no value; write {name}")
                values[name] = True
            elif name in _VALUE_FAULTS:
                if not has_value or not value:
                    raise FaultsError(
                        f"fault item {item!r}: {name!r} needs a value; write {_VALUE_FAULTS[name]}"
                    )
                values[name] = _fault_value(item, name, value)
            else:
                raise FaultsError(f"fault item {item!r} is unknown; valid items: {_FAULT_HELP}")
        try:
            return cls(**values)
        except (FaultsError, TypeError, ValueError) as exc:
            raise FaultsError(f"faults {spec!r}: {exc}") from None

    @classmethod
    def from_env(cls, environ: Mapping[str, str], default: str = "") -> Faults:
        """`COUNTERSIGN_SIM_FAULTS` if set (even empty: no faults), else `default` (config)."""
        return cls.parse(environ.get(FAULTS_ENV, default))

    def __str__(self) -> str:
        items: list[str] = [name for name in _FLAG_FAULTS if getattr(self, name)]
        if self.latency_ms:
            items.append(f"latency_ms={self.latency_ms}")
        if self.partial_fill is not None:
            items.append(f"partial_fill={text(self.partial_fill)}")
        if self.slippage_bps is not None:
            items.append(f"slippage_bps={text(self.slippage_bps)}")
        return ",".join(items)

    @property
    def active(self) -> bool:
        return bool(str(self))

    # -- decisions (pure; matching calls them under the exact decimal context) ------------
    def rejection(self) -> str | None:
        """The reason `reject` gives a new order, or None."""
        return "simulated fault: reject" if self.reject else None

    def market_price(self, side: str, inst: Instrument) -> Decimal:
        """The mark, or with `slippage_bps` the mark moved against the order, on the tick."""
        if not self.slippage_bps:
            return inst.mark
        sign = 1 if side == "buy" else -1
        raw = inst.mark * (BPS + sign * self.slippage_bps) / BPS
        # Onto the tick, against the order: up for a buy, down for a sell. This is a fill
        # price the venue chooses, not the operator's order, so it may be put on the tick.
        ticks, rest = divmod(raw, inst.tick)
        if side == "buy" and rest != 0:
            ticks += 1
        return ticks * inst.tick

    def tick_chunk(self, quantity: Decimal, remaining: Decimal, lot: Decimal) -> Decimal:
        """What one tick fills of a crossed resting order: all that remains, or with
        `partial_fill` that fraction of the order's quantity (at least one lot)."""
        if self.partial_fill is None:
            return remaining
        part = (quantity * self.partial_fill // lot) * lot
        return min(max(part, lot), remaining)

    def fee(self, qty: Decimal, price: Decimal, rate: Decimal) -> Decimal | None:
        """A fill's fee (exact), or None with `fees_unknown`: unknown, never zero."""
        return None if self.fees_unknown else plain(qty * price * rate)


def _fault_value(item: str, name: str, value: str) -> int | Decimal:
    if name == "latency_ms":
        if not value.isdecimal() or not value.isascii():
            raise FaultsError(f"fault item {item!r}: write {_VALUE_FAULTS[name]}")
        return int(value)
    if not re.fullmatch(r"(0|[1-9][0-9]*)(\.[0-9]+)?", value):
        raise FaultsError(f"fault item {item!r}: write {_VALUE_FAULTS[name]}")
    try:
        return Decimal(value)
    except InvalidOperation:  # pragma: no cover - the pattern admits only plain decimals
        raise FaultsError(f"fault item {item!r}: write {_VALUE_FAULTS[name]}") from None
