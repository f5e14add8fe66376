"""One way to write a time and a number (kernel/display.py): grouped amounts that never lose
a digit nor show more decimals than their precision asks, and times that always name their
zone."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel.display import (
    amount_text,
    clock,
    grouped,
    local_zone,
    money,
    number,
    when,
    zone,
)

DECIMALS = st.decimals(
    min_value=Decimal("-1e15"), max_value=Decimal("1e15"), allow_nan=False, allow_infinity=False
)


def decimals_shown(text: str) -> int:
    digits = text.split(" ")[0]
    return len(digits.partition(".")[2])


@given(DECIMALS, st.integers(min_value=0, max_value=8))
def test_an_amount_never_loses_a_digit_nor_shows_more_decimals_than_it_needs(
    value: Decimal, places: int
) -> None:
    shown = grouped(value, places)
    assert Decimal(shown.replace(",", "")) == value  # never rounded
    plain = format(value, "f")
    significant = len(plain.partition(".")[2].rstrip("0"))
    assert decimals_shown(shown) == max(places, significant)  # padded, never more
    whole = shown.lstrip("-").partition(".")[0]
    assert all(len(group) == 3 for group in whole.split(",")[1:])  # thousands, grouped


@given(DECIMALS)
def test_a_quantity_keeps_the_decimals_it_was_filed_with(value: Decimal) -> None:
    shown = number(format(value, "f"))  # as filed: plain decimal text
    assert Decimal(shown.replace(",", "")) == value
    assert decimals_shown(shown) == max(0, -int(value.as_tuple().exponent))


@pytest.mark.parametrize(
    ("value", "currency", "said"),
    [
        ("27.0000000", "USDC", "27.00 USDC"),  # no trailing zeros past the cents
        ("30.0000000", "USDC", "30.00 USDC"),
        ("0.3", "USDC", "0.30 USDC"),
        ("0.1180", "USDC", "0.118 USDC"),  # more where the value has more: never rounded
        ("60000.00", "USDC", "60,000.00 USDC"),
        ("1234567.891", "USD", "1,234,567.891 USD"),
        ("10.00", "BTC", "10 BTC"),  # a currency without a stated precision: its digits
        ("0.00012300", "BTC", "0.000123 BTC"),
    ],
)
def test_fees_and_amounts_are_shown_to_their_currencys_precision(
    value: str, currency: str, said: str
) -> None:
    assert money(value, currency) == said
    assert money(Decimal(value), currency) == said


def test_amount_words_from_the_store_read_alike() -> None:
    """ "60000.00 USDC" beside "50,000 USDC" was the newcomer's find: both now read alike."""
    assert amount_text("60000.00 USDC") == "60,000.00 USDC"
    assert amount_text("50,000 USDC") == "50,000.00 USDC"
    assert amount_text("unknown USDC") == "unknown USDC"  # words, not an amount
    assert amount_text("30") == "30"
    assert number("60000") == "60,000" and number("0.010") == "0.010"
    assert number("BTC-PERP") == "BTC-PERP" and number(True) == "True"


def test_every_time_names_its_zone() -> None:
    at = datetime(2026, 12, 7, 10, 0, tzinfo=UTC)
    assert when(at, ZoneInfo("Asia/Shanghai")) == "2026-12-07 18:00 CST"
    assert when("2026-12-07T10:00:00Z", UTC) == "2026-12-07 10:00 UTC"
    assert clock(at, ZoneInfo("Asia/Shanghai")) == "18:00 CST"
    assert when(at, ZoneInfo("Europe/Paris")) == "2026-12-07 11:00 CET"
    # a zone without letters for itself is named by its offset, never left unnamed
    assert when(at, ZoneInfo("Asia/Dubai")) == "2026-12-07 14:00 +04"


def test_the_display_zone_is_this_machines_unless_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    assert zone("local") == ZoneInfo("Asia/Shanghai") == local_zone()
    assert zone("") == ZoneInfo("Asia/Shanghai")
    assert zone("UTC") is UTC and zone("Europe/Paris") == ZoneInfo("Europe/Paris")
    with pytest.raises(ValueError):
        zone("Mars/Olympus")
