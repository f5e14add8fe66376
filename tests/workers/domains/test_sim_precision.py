"""The simulated venue can list an instrument the way Hyperliquid does (5 significant figures,
whole prices always; a minimum value per order) and then refuses, as that venue would, what
does not fit — never rounding it. Its file keeps these rules, and a file written before them
is upgraded in place."""

from __future__ import annotations

import sqlite3
from decimal import Decimal
from pathlib import Path
from typing import Any

from workers.domains.finance.sim.profile import DEFAULT_INSTRUMENTS
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.venues.model import Instrument, ProtectiveSpec, VenueOrder

D = Decimal
FIVE_FIGURES = Instrument(
    "BTC-PERP",
    tick=D("0.1"),
    lot=D("0.00001"),
    min_qty=D("0.00001"),
    mark=D("60000"),
    sig_figs=5,
    min_notional=D(10),
)


def buy(client_id: str, quantity: str, price: str, **more: Any) -> VenueOrder:
    return VenueOrder(
        client_id=client_id,
        account="sim-main",
        instrument="BTC-PERP",
        side="buy",
        quantity=D(quantity),
        order_type="limit",
        time_in_force="GTC",
        leverage=D(2),
        limit_price=D(price),
        **more,
    )


async def test_what_does_not_fit_is_rejected_with_the_reason_and_never_rounded(
    tmp_path: Path,
) -> None:
    async with await SimVenue.open(tmp_path / "v.db", instruments=[FIVE_FIGURES]) as venue:
        stored = (await venue.observe("sim-main")).instruments["BTC-PERP"]
        assert (stored.sig_figs, stored.min_notional) == (5, D(10))
        cases = {
            "precise": (buy("precise", "0.001", "60000.5"), "more than 5 significant figures"),
            "small": (buy("small", "0.00016", "60000"), "below the minimum 10"),
            "child": (
                buy("child", "0.001", "60000", protective=ProtectiveSpec(stop_loss=D("57000.5"))),
                "protective.stop_loss 57000.5 has more than 5 significant figures",
            ),
        }
        for client_id, (order, says) in cases.items():
            placed = (await venue.submit(order)).order
            assert placed.status == "rejected", client_id
            assert placed.reason is not None and says in placed.reason, placed.reason
            assert "never rounded" in placed.reason
            assert placed.limit_price == order.limit_price and placed.quantity == order.quantity
        # whole prices of six figures and orders of the minimum value are taken
        whole = (await venue.submit(buy("whole", "0.0001", "123456"))).order
        assert whole.status == "filled"  # at the mark: a buy limit above it crosses
        enough = (await venue.submit(buy("enough", "0.00017", "59999"))).order
        assert enough.status == "resting"


async def test_a_file_written_before_the_rules_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    async with await SimVenue.open(path) as venue:
        await venue.submit(buy("kept", "0.001", "59000"))
    # make it the file an earlier build wrote: no such columns, schema version 1
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE instruments DROP COLUMN sig_figs")
        conn.execute("ALTER TABLE instruments DROP COLUMN min_notional")
        conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    async with await SimVenue.open(path) as venue:
        kept = await venue.lookup("kept")
        assert kept is not None and kept.status == "resting"  # nothing of it was lost
        btc = (await venue.observe("sim-main")).instruments["BTC-PERP"]
        assert btc == DEFAULT_INSTRUMENTS[0]  # no figures, no minimum: the tick alone
    with sqlite3.connect(path) as conn:
        [(version,)] = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'")
    assert version == "2"
