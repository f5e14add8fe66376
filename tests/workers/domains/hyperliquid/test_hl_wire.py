"""Our orders as Hyperliquid wires, through the SDK's own helpers: exact values or a refusal."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from decimal import Decimal

import pytest

from workers.domains.finance.hyperliquid import precision
from workers.domains.finance.hyperliquid.wire import (
    Asset,
    WireRefusal,
    cloid_of,
    coin_of,
    instrument_of,
    order_action,
    universe,
)
from workers.domains.finance.venues.model import VenueOrder

BTC = Asset(coin="BTC", asset=0, sz_decimals=5, max_leverage=Decimal(40))
SOL = Asset(coin="SOL", asset=2, sz_decimals=2, max_leverage=Decimal(20))


def test_cloid_is_the_first_16_bytes_of_the_client_ids_sha256() -> None:
    digest = hashlib.sha256(b"cs-01HX").hexdigest()
    assert cloid_of("cs-01HX") == "0x" + digest[:32]
    assert len(cloid_of("cs-01HX:sl")) == 34
    assert cloid_of("cs-01HX:sl") != cloid_of("cs-01HX")


def test_instrument_names_map_to_perp_coins_and_hip3_is_never_listed() -> None:
    assert coin_of("BTC-PERP") == "BTC"
    assert instrument_of("BTC") == "BTC-PERP"
    assert coin_of("BTC") is None
    assert coin_of("BTC-SPOT") is None
    assert coin_of("xyz:TSLA-PERP") is None
    assert instrument_of("xyz:TSLA") is None
    meta = {
        "universe": [
            {"name": "BTC", "szDecimals": 5, "maxLeverage": 40},
            {"name": "OLD", "szDecimals": 1, "maxLeverage": 3, "isDelisted": True},
            {"name": "xyz:TSLA", "szDecimals": 2, "maxLeverage": 10},
            {"name": "SOL", "szDecimals": 2, "maxLeverage": 20},
        ]
    }
    listed = universe(meta)
    assert sorted(listed) == ["BTC-PERP", "SOL-PERP"]
    assert listed["SOL-PERP"].asset == 3  # the index in meta.universe, gaps included


def test_limit_order_wire(new_order: Callable[..., VenueOrder]) -> None:
    order = new_order(quantity=Decimal("0.0015"), limit_price=Decimal("61234"), side="sell")
    built = order_action(order, BTC, None)
    assert built.action == {
        "type": "order",
        "orders": [
            {
                "a": 0,
                "b": False,
                "p": "61234",
                "s": "0.0015",
                "r": False,
                "t": {"limit": {"tif": "Gtc"}},
                "c": cloid_of(order.client_id),
            }
        ],
        "grouping": "na",
    }
    assert built.cloids == {order.client_id: cloid_of(order.client_id)}


@pytest.mark.parametrize(("tif", "wire"), [("GTC", "Gtc"), ("IOC", "Ioc"), ("POST_ONLY", "Alo")])
def test_time_in_force(new_order: Callable[..., VenueOrder], tif: str, wire: str) -> None:
    built = order_action(new_order(time_in_force=tif), BTC, None)
    assert built.action["orders"][0]["t"] == {"limit": {"tif": wire}}


def test_fok_is_refused_not_approximated(new_order: Callable[..., VenueOrder]) -> None:
    with pytest.raises(WireRefusal, match="FOK is not offered by Hyperliquid"):
        order_action(new_order(time_in_force="FOK"), BTC, None)


def test_market_order_is_an_ioc_limit_at_its_bound(new_order: Callable[..., VenueOrder]) -> None:
    order = new_order(order_type="market", limit_price=None, max_slippage_bps=Decimal(50))
    built = order_action(order, BTC, Decimal("60300"))
    assert built.action["orders"][0]["t"] == {"limit": {"tif": "Ioc"}}
    assert built.action["orders"][0]["p"] == "60300"
    with pytest.raises(WireRefusal, match="price at the slippage bound"):
        order_action(order, BTC, None)


def test_protective_children_are_a_normal_tpsl_group(
    new_order: Callable[..., VenueOrder],
) -> None:
    order = new_order(protective=(Decimal("55000"), Decimal("65000")))
    built = order_action(order, BTC, None)
    assert built.action["grouping"] == "normalTpsl"
    parent, sl, tp = built.action["orders"]
    assert parent["b"] is True and parent["r"] is False
    for child, kind, px in ((sl, "sl", "55000"), (tp, "tp", "65000")):
        assert child["b"] is False  # the opposite side
        assert child["r"] is True  # reduce-only
        assert child["s"] == parent["s"]
        assert child["t"] == {"trigger": {"isMarket": True, "triggerPx": px, "tpsl": kind}}
    assert sl["c"] == cloid_of(order.client_id + ":sl")
    assert tp["c"] == cloid_of(order.client_id + ":tp")
    assert list(built.cloids) == [order.client_id, order.client_id + ":sl", order.client_id + ":tp"]


def test_only_a_stop_loss(new_order: Callable[..., VenueOrder]) -> None:
    built = order_action(new_order(protective=(Decimal("55000"), None)), BTC, None)
    assert [o["t"].get("trigger", {}).get("tpsl") for o in built.action["orders"]] == [None, "sl"]


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"limit_price": Decimal("60000.5")}, "more than 5 significant figures"),
        ({"quantity": Decimal("0.000001")}, "more than 5 decimals"),
        ({"limit_price": Decimal("0")}, "must be greater than zero"),
        ({"protective": (Decimal("55000.5"), None)}, "protective.stop_loss 55000.5"),
    ],
)
def test_precision_refusals_name_the_field(
    new_order: Callable[..., VenueOrder], overrides: dict[str, object], words: str
) -> None:
    with pytest.raises(WireRefusal, match=words):
        order_action(new_order(**overrides), BTC, None)


def test_decimals_rule_depends_on_sz_decimals(new_order: Callable[..., VenueOrder]) -> None:
    # SOL: szDecimals 2, so at most 4 price decimals (and 5 significant figures)
    ok = order_action(
        new_order(instrument="SOL-PERP", quantity=Decimal(10), limit_price=Decimal("1.2345")),
        SOL,
        None,
    )
    assert ok.action["orders"][0]["p"] == "1.2345"
    with pytest.raises(WireRefusal, match="more than 4 decimals"):
        order_action(
            new_order(instrument="SOL-PERP", quantity=Decimal(10), limit_price=Decimal("0.12345")),
            SOL,
            None,
        )


def test_a_value_the_sdks_float_cannot_carry_exactly_is_refused(
    new_order: Callable[..., VenueOrder],
) -> None:
    # integers are always valid prices, but this one does not survive float(): never sent
    # as a different number
    with pytest.raises(WireRefusal, match="never a different value"):
        order_action(new_order(limit_price=Decimal("12345678901234567")), BTC, None)


def test_precision_helpers() -> None:
    assert precision.tick(5) == Decimal("0.1")
    assert precision.lot(5) == Decimal("0.00001")
    assert precision.price_refusal("p", Decimal("123456"), 0) is None  # integers always
    assert precision.price_refusal("p", Decimal("12345.6"), 0) is not None
    assert precision.size_refusal("q", Decimal("1.10"), 1) is None  # trailing zeros ignored
