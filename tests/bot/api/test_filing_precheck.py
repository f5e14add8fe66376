"""Issue 30: nothing confirmable can never run, and no term can break arithmetic later.

Filing runs the venue's pre-check against a fresh observation of the real simulated venue:
an order the venue could never take as it stands is a 422 naming the field and the fix,
and nothing is stored (so no card is ever offered). The account's state (budget, a
reduce-only order's position) is left to the claim. Decimals are bounded at intake, a
notional too large to handle is a 422 (both were 5xx or a stuck claim), and `/check`
answers 503 only when the venue could not be read. Both backends."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from bot.api.wire import ErrorView
from store import Store
from tests.support.api import ClientFactory, auth
from tests.support.factories import order_request
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.venues.model import Instrument

ROUTES = ("/api/v1/operations", "/api/v1/operations/check")


async def operations(store: Store) -> int:
    return len((await store.list_operations(limit=100)).items)


async def post(api: TestClient[Any, Any], path: str, body: Any) -> tuple[int, Any]:
    response = await api.post(path, data=json.dumps(body), headers=auth())
    return response.status, await response.json()


def order(request_id: str, **payload: Any) -> dict[str, Any]:
    body = order_request(request_id)
    body["payload"].pop("protective")
    body["payload"].update(payload)
    return body


def fields(answer: Any) -> dict[str, str]:
    error = ErrorView.model_validate(answer["error"])
    return {problem.field: f"{problem.reason} | {problem.fix}" for problem in error.fields}


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"quantity": "0.0105"}, "payload.quantity", "not a multiple of the lot 0.001"),
        ({"quantity": "0.0005"}, "payload.quantity", "not a multiple of the lot"),
        ({"limit_price": "60000.25"}, "payload.limit_price", "not a multiple of the tick 0.5"),
        ({"protective": {"stop_loss": "57000.1"}}, "payload.protective", "tick"),
        ({"leverage": "50"}, "payload.leverage", "above the venue's 20"),
        ({"fee_currency": "USDT"}, "payload.fee_currency", "charged in USDC"),
        ({"max_fee": "0.01"}, "payload.max_fee", "above the confirmed cap 0.01"),
        # a sell below the mark fills at the mark: its fee is the mark's, not its limit's
        (
            {"side": "sell", "quantity": "3.000", "limit_price": "0.5", "max_fee": "0.01"},
            "payload.max_fee",
            "the fee could reach 90",
        ),
    ],
    ids=[
        "off-lot",
        "below-lot",
        "off-tick",
        "stop-off-tick",
        "leverage",
        "fee-ccy",
        "fee-cap",
        "sell-fee",
    ],
)
async def test_an_order_the_venue_could_never_take_is_refused_at_filing_with_no_card(
    api: TestClient[Any, Any], store: Store, change: dict[str, Any], field: str, says: str
) -> None:
    body = order(f"never-{field}", **change)
    answers = [await post(api, path, body) for path in ROUTES]
    for status, answer in answers:
        assert status == 422, answer
        assert answer["error"]["code"] == "precheck_would_refuse"
        named = fields(answer)
        assert list(named) == [field] and says in named[field], named
        assert "propose" in named[field]  # the fix
    assert answers[0] == answers[1]  # /check answers exactly what filing answers
    assert await operations(store) == 0


async def test_the_account_state_is_left_to_the_claim(
    api: TestClient[Any, Any], store: Store
) -> None:
    """A reduce-only sell larger than the (empty) position is filed: the position may
    change before anyone confirms; the claim's preflight refuses it then."""
    status, view = await post(api, ROUTES[0], order("reduce-later", side="sell", reduce_only=True))
    assert status == 201, view
    # and an order above the account's 100,000 budget (quantity 3 at 60,000)
    big = order("budget-later", quantity="3.000", max_fee="100")
    status, view = await post(api, ROUTES[0], big)
    assert status == 201, view
    assert await operations(store) == 2


@pytest.mark.parametrize("path", ROUTES)
async def test_digits_past_the_bound_are_a_422_naming_the_field_and_the_bound(
    api: TestClient[Any, Any], store: Store, path: str
) -> None:
    """`quantity = 1e25`, `limit_price = 1e-22` showed as 1,000 USDC and, once confirmed,
    failed every executor pass (DivisionImpossible)."""
    body = order(
        "tiny-huge", quantity="10000000000000000000000000", limit_price="0.0000000000000000000001"
    )
    status, answer = await post(api, path, body)
    assert status == 422, answer
    named = fields(answer)
    assert set(named) == {"payload.quantity", "payload.limit_price"}, named
    assert "26 digit(s) before the decimal point" in named["payload.quantity"]
    assert "22 after" in named["payload.limit_price"]
    for text in named.values():
        assert "at most 15 before and 12 after" in text
    assert await operations(store) == 0


@pytest.mark.parametrize("path", ROUTES)
async def test_a_notional_too_large_to_handle_is_a_422_not_a_5xx(
    api: TestClient[Any, Any], store: Store, path: str
) -> None:
    """A notional of about 1e26 or more was a 500 on both routes."""
    body = order("vast", quantity="999999999999999", limit_price="999999999999")
    status, answer = await post(api, path, body)
    assert status == 422, answer
    assert "largest amount countersign takes" in fields(answer)["payload.quantity"]
    assert await operations(store) == 0


# -- /check: 503 is for a failed read only ---------------------------------------------------

# a venue that steps in 1e-20: a 15-digit quantity is 35 digits of lots
DUST_STEP = Decimal("0.00000000000000000001")
DUST = Instrument(
    "DUST-PERP", tick=DUST_STEP, lot=DUST_STEP, min_qty=DUST_STEP, mark=Decimal("0.000000000001")
)


@pytest.fixture
async def dust_venue(tmp_path: Path) -> AsyncIterator[SimVenue]:
    opened = await SimVenue.open(tmp_path / "dust.db", instruments=[DUST], accounts=["sim-main"])
    yield opened
    await opened.close()


async def test_a_pre_check_past_the_default_decimal_digits_is_exact_not_a_503(
    store: Store, client_for: ClientFactory, dust_venue: SimVenue
) -> None:
    """Whether 999999999999999 is a multiple of a 1e-20 lot is a 35-digit quotient: it
    raised DivisionImpossible inside the pure check, and /check answered 503
    `capabilities_unavailable` (retry) for an error no retry could cure."""
    api = await client_for(
        capabilities={"finance.order": dust_venue.capabilities}, prechecks=dust_venue
    )
    body = order(
        "dust",
        instrument="DUST-PERP",
        quantity="999999999999999",
        limit_price="0.000000000001",
        max_fee="1",
    )
    status, answer = await post(api, ROUTES[1], body)
    assert status == 200 and answer["admissible"], answer
    status, answer = await post(api, ROUTES[0], body)
    assert status == 201, answer
    assert await operations(store) == 1


async def test_only_a_failed_venue_read_is_503_and_nothing_is_stored(
    store: Store, client_for: ClientFactory, tmp_path: Path
) -> None:
    unreadable = await SimVenue.open(tmp_path / "gone.db", accounts=["sim-main"])
    await unreadable.close()  # every read of it now fails
    api = await client_for(prechecks=unreadable)
    for path in ROUTES:
        status, answer = await post(api, path, order("unread"))
        assert status == 503, answer
        assert answer["error"]["code"] == "capabilities_unavailable"
    assert await operations(store) == 0


async def test_a_slippage_bound_above_100_percent_is_a_422_naming_it(
    api: TestClient[Any, Any], store: Store
) -> None:
    body = order("wide", order_type="market", max_slippage_bps="10001", time_in_force="IOC")
    body["payload"].pop("limit_price")
    status, answer = await post(api, ROUTES[0], body)
    assert status == 422, answer
    assert "at most 10000" in fields(answer)["payload.max_slippage_bps"]
    body["payload"]["max_slippage_bps"] = "10000"
    status, answer = await post(api, ROUTES[1], body)
    assert status == 200, answer
    assert await operations(store) == 0


# -- a venue whose prices have significant figures and orders a minimum value -----------------

# BTC as Hyperliquid lists it (szDecimals 5): 5 significant figures, whole prices always, $10
FIVE_FIGURES = Instrument(
    "BTC-PERP",
    tick=Decimal("0.1"),
    lot=Decimal("0.00001"),
    min_qty=Decimal("0.00001"),
    mark=Decimal("60000"),
    sig_figs=5,
    min_notional=Decimal("10"),
)


@pytest.mark.parametrize(
    ("change", "field", "code"),
    [
        ({"limit_price": "60000.5"}, "payload.limit_price", "price_too_precise"),
        ({"protective": {"stop_loss": "57000.5"}}, "payload.protective", "protective_too_precise"),
        ({"quantity": "0.00016"}, "payload.quantity", "below_minimum_notional"),
    ],
    ids=["price", "protective", "notional"],
)
async def test_a_price_or_size_the_venue_would_refuse_is_a_422_before_any_card(
    store: Store,
    client_for: ClientFactory,
    tmp_path: Path,
    change: dict[str, Any],
    field: str,
    code: str,
) -> None:
    venue = await SimVenue.open(tmp_path / "hl.db", instruments=[FIVE_FIGURES])
    try:
        api = await client_for(capabilities={"finance.order": venue.capabilities}, prechecks=venue)
        body = order(f"hl-{code}", **change)
        for path in ROUTES:
            status, answer = await post(api, path, body)
            assert status == 422, answer
            assert fields(answer)[field].startswith(code), answer
            assert "propose a new order" in fields(answer)[field]
        # the same order at terms the venue takes is filed: 5 figures, worth >= 10
        fine = order(f"hl-ok-{code}", quantity="0.00017", limit_price="60000")
        status, answer = await post(api, ROUTES[0], fine)
        assert status == 201, answer
        assert await operations(store) == 1
    finally:
        await venue.close()
