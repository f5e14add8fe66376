"""Whether an outcome concludes its stage is the domain's say (the store names no status)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from store import World
from workers.domains.finance.runner import observed
from workers.domains.finance.venues.model import VenueOrderState

AT = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
PARENT = VenueOrderState(
    client_id="cs-parent",
    role="parent",
    parent_client_id=None,
    account="sim-main",
    instrument="BTC-PERP",
    side="buy",
    order_type="limit",
    time_in_force="GTC",
    reduce_only=False,
    leverage=Decimal(2),
    quantity=Decimal("0.010"),
    limit_price=Decimal(60000),
    max_slippage_bps=None,
    trigger_price=None,
    status="resting",
    filled_qty=Decimal(0),
    remaining_qty=Decimal("0.010"),
    avg_price=None,
    fees=None,
    fee_currency="USDC",
    fills=(),
    reason=None,
    submit_count=1,
    created_at=AT,
    updated_at=AT,
    world=World.SIMULATED,
)


@pytest.mark.parametrize(
    ("status", "concludes"),
    [
        ("accepted", False),
        ("resting", False),
        ("partially_filled", False),
        ("filled", True),
        ("rejected", True),
        ("cancelled", True),
    ],
)
def test_a_finance_outcome_concludes_once_the_order_itself_is_done(
    status: str, concludes: bool
) -> None:
    assert observed(dataclasses.replace(PARENT, status=status), "sim").concludes is concludes


def test_a_filled_order_whose_protective_children_still_work_has_concluded() -> None:
    child = dataclasses.replace(
        PARENT, client_id="cs-parent:sl", role="stop_loss", status="accepted"
    )
    found = observed(dataclasses.replace(PARENT, status="filled", children=(child,)), "sim")
    assert found.working and found.concludes
