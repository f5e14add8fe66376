"""The worst-case notional a domain computes at proposal time, for approval rules by amount
(workers/domains/base.py `Domain.notional`): pure, from the payload, the domain's settings
and the venue capabilities read for the proposal."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from store import World
from tests.support.factories import MESSAGE_PAYLOAD, ORDER_PAYLOAD
from workers.domains.base import Amount
from workers.domains.finance.domain import FinanceDomain
from workers.domains.finance.schema import FinanceOrderV1
from workers.domains.finance.settings import FinanceSettings
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.venues.model import Capabilities
from workers.domains.message.domain import MessageDomain
from workers.domains.message.schema import MessageSendV1
from workers.domains.message.settings import MessageSettings

FINANCE = FinanceDomain()
SETTINGS = FinanceSettings.model_validate(
    {
        "accounts": [
            {"name": "sim-main", "venue": "sim", "budget": "100000"},
            {"name": "sim-usdt", "venue": "sim", "budget": "100000", "currency": "USDT"},
        ]
    }
)


def capabilities(marks: dict[str, str] | None = None) -> Capabilities:
    return Capabilities(
        venue="sim",
        world=World.SIMULATED,
        accounts=frozenset({"sim-main", "sim-usdt"}),
        account_modes=frozenset({"one_way"}),
        instruments=frozenset({"BTC-PERP", "ETH-PERP"}),
        order_types=frozenset({"limit", "market"}),
        time_in_force=frozenset({"GTC", "IOC"}),
        marks={name: Decimal(mark) for name, mark in (marks or {}).items()},
        modes_by_account={"sim-main": "one_way", "sim-usdt": "one_way"},
    )


def order(**changes: Any) -> FinanceOrderV1:
    payload = {**ORDER_PAYLOAD, **changes}
    return FinanceOrderV1.model_validate({k: v for k, v in payload.items() if v is not None})


def market(**changes: Any) -> FinanceOrderV1:
    terms: dict[str, Any] = {"max_slippage_bps": "50", **changes}
    return order(order_type="market", limit_price=None, **terms)


def notional(payload: FinanceOrderV1, caps: Capabilities | None = None) -> Amount | None:
    return FINANCE.notional(payload, SETTINGS, caps or capabilities())


# -- limit orders -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quantity", "price", "expected"),
    [
        ("1.000", "60000", "60000.000"),
        ("0.010", "60000", "600.000"),
        ("0.333", "60000.5", "19980.1665"),
    ],
)
def test_a_limit_order_is_quantity_times_its_limit_price(
    quantity: str, price: str, expected: str
) -> None:
    found = notional(order(quantity=quantity, limit_price=price))
    assert found == Amount(Decimal(expected), "USDC")


def test_a_limit_order_is_in_its_accounts_currency_and_needs_no_mark() -> None:
    payload = order(account="sim-usdt", quantity="2", limit_price="100")
    assert notional(payload, capabilities({"BTC-PERP": "999999"})) == Amount(Decimal(200), "USDT")
    # an account the config lacks is refused by admit; the notional still has a currency
    assert notional(order(account="sim-nope")) == Amount(Decimal("600.000"), "USDC")


def test_a_sell_limit_is_counted_at_the_mark_when_the_mark_is_above_its_limit() -> None:
    """Issue 30: a sell fills at or above its limit; `SELL 3 @ 0.5` at a 60,000 mark is
    180,000, not 1.50."""
    caps = capabilities({"BTC-PERP": "60000"})
    found = notional(order(side="sell", quantity="3", limit_price="0.5"), caps)
    assert found == Amount(Decimal(180000), "USDC") and found.text() == "180000.00 USDC"
    # above the mark it rests and fills at its limit: the limit is then the worst case
    above = notional(order(side="sell", quantity="3", limit_price="61000"), caps)
    assert above == Amount(Decimal(183000), "USDC")


def test_a_sell_limit_without_a_mark_has_an_unknown_notional_a_buy_limit_does_not() -> None:
    assert notional(order(side="sell")) == Amount(None, "USDC")
    assert notional(order(side="buy")) == Amount(Decimal("600.000"), "USDC")


def test_an_order_whose_notional_reaches_the_bound_is_a_field_problem() -> None:
    """A notional of 1e26 was a 5xx (Amount.text could not print it); any notional at or
    above 1e18 is refused at intake, naming the quantity."""
    caps = capabilities({"BTC-PERP": "60000"})
    huge = order(quantity="999999999999999", limit_price="999999999999")
    [problem] = FINANCE.capability_problems(huge, caps)
    assert problem.field == "payload.quantity" and "1e+18" in problem.reason
    assert FINANCE.capability_problems(order(quantity="1000000", limit_price="1000"), caps) == []
    sell = order(side="sell", quantity="999999999999999", limit_price="0.5")
    [problem] = FINANCE.capability_problems(sell, capabilities({"BTC-PERP": "60000000"}))
    assert problem.field == "payload.quantity"  # a sell is weighed at the mark, not its limit


# -- market orders ------------------------------------------------------------------------------


def test_a_market_order_is_quantity_times_the_mark_moved_by_its_slippage_bound() -> None:
    caps = capabilities({"BTC-PERP": "60000", "ETH-PERP": "3000"})
    found = notional(market(quantity="1.000", max_slippage_bps="50"), caps)
    assert found == Amount(Decimal("1.000") * Decimal(60000) * Decimal("1.005"), "USDC")
    assert found is not None and found.value == Decimal("60300")
    assert found.text() == "60300.00 USDC"
    eth = notional(market(instrument="ETH-PERP", quantity="2", max_slippage_bps="0"), caps)
    assert eth == Amount(Decimal(6000), "USDC")


def test_a_market_order_without_a_mark_has_an_unknown_notional() -> None:
    found = notional(market(), capabilities({"ETH-PERP": "3000"}))
    assert found == Amount(None, "USDC")
    assert found.text() == "unknown USDC"
    usdt = notional(market(account="sim-usdt"), capabilities())
    assert usdt == Amount(None, "USDT")


async def test_the_simulated_venue_reports_the_marks_a_market_order_is_priced_at(
    venue: SimVenue,
) -> None:
    caps = await venue.capabilities()
    mark = caps.marks["BTC-PERP"]
    found = notional(market(quantity="0.5", max_slippage_bps="100"), caps)
    assert found == Amount(Decimal("0.5") * mark * Decimal("1.01"), "USDC")


# -- a message moves no amount ------------------------------------------------------------------


def test_a_message_has_no_notional() -> None:
    payload = MessageSendV1.model_validate(MESSAGE_PAYLOAD)
    assert MessageDomain().notional(payload, MessageSettings(), None) is None
