"""The `countersign venue orders` listing: the venue's orders as a table or as JSON.

This module owns what the operator tool prints: `render_orders` turns order states into
an aligned text table (or a JSON document), always marked SIMULATED, and
`venue_orders_text` opens a venue file without creating it and renders its orders.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from workers.domains.finance.sim.decimals import text
from workers.domains.finance.sim.profile import VENUE_NAME, WORLD
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.venues.model import VenueOrderState

_COLUMNS = (
    ("CLIENT ID", "client_id"),
    ("ROLE", "role"),
    ("ACCOUNT", "account"),
    ("INSTRUMENT", "instrument"),
    ("SIDE", "side"),
    ("TYPE", "type"),
    ("QTY", "quantity"),
    ("FILLED", "filled_qty"),
    ("PRICE", "price"),
    ("AVG", "avg_price"),
    ("FEES", "fees"),
    ("STATUS", "status"),
    ("SUBMITS", "submit_count"),
    ("REASON", "reason"),
)


def render_orders(orders: Sequence[VenueOrderState], *, as_json: bool = False) -> str:
    """The venue's orders for `countersign venue orders [--json]`. Always marked SIMULATED."""
    if as_json:
        document = {
            "venue": VENUE_NAME,
            "world": WORLD.value,
            "simulated": True,
            "orders": [o.to_json(children=False) for o in orders],
        }
        return json.dumps(document, ensure_ascii=False, indent=2)
    header = f"SIMULATED venue {VENUE_NAME!r}: {len(orders)} order(s)"
    if not orders:
        return header + "\n"
    rows = [[title for title, _ in _COLUMNS]]
    for o in orders:
        price = o.trigger_price if o.role != "order" else o.limit_price
        cells = {
            "client_id": o.client_id,
            "role": {"order": "order", "stop_loss": "sl", "take_profit": "tp"}[o.role],
            "account": o.account,
            "instrument": o.instrument,
            "side": o.side,
            "type": o.order_type + ("" if o.role != "order" else f"/{o.time_in_force}"),
            "quantity": text(o.quantity),
            "filled_qty": text(o.filled_qty),
            "price": "-" if price is None else text(price),
            "avg_price": "-" if o.avg_price is None else text(o.avg_price),
            "fees": "unknown" if o.fees is None else f"{text(o.fees)} {o.fee_currency}".strip(),
            "status": o.status,
            "submit_count": str(o.submit_count),
            "reason": o.reason or "",
        }
        rows.append([cells[key] for _, key in _COLUMNS])
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    return "\n".join([header, *lines]) + "\n"


async def venue_orders_text(
    path: Path, *, as_json: bool = False, account: str | None = None
) -> str:
    """Open the venue file read-only-ish (never creates it) and render its orders."""
    venue = await SimVenue.open(path, create=False)
    try:
        return render_orders(await venue.orders(account), as_json=as_json)
    finally:
        await venue.close()
