"""`countersign venue orders` lists the simulated venue's orders with their submit counts."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from tests.support.processes import cli
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.venues.model import VenueOrder


async def test_venue_orders_lists_client_ids_and_submit_counts(tmp_path: Path) -> None:
    data_dir = tmp_path / "dev"
    async with await SimVenue.open(data_dir / "sim-venue.db") as venue:
        order = VenueOrder(
            client_id="cs-op-1",
            account="sim-main",
            instrument="BTC-PERP",
            side="buy",
            quantity=Decimal("0.010"),
            order_type="limit",
            limit_price=Decimal(60000),
            max_slippage_bps=None,
            time_in_force="GTC",
            reduce_only=False,
            leverage=Decimal(2),
        )
        await venue.submit(order)
        await venue.submit(order)
    listed = await cli("venue", "orders", "--dev", "--data-dir", str(data_dir), "--json")
    assert listed.code == 0, listed.err
    body = json.loads(listed.out)
    rows = body["orders"] if isinstance(body, dict) else body
    [row] = [r for r in rows if r["client_id"] == "cs-op-1"]
    assert row["submit_count"] == 2 and row["status"] == "filled"
    text = await cli("venue", "orders", "--dev", "--data-dir", str(data_dir))
    assert "SIMULATED" in text.out and "cs-op-1" in text.out
    missing = await cli("venue", "orders", "--dev", "--data-dir", str(tmp_path / "none"))
    assert missing.code == 1 and "no venue state" in missing.err
