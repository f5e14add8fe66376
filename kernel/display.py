"""How a person reads a time and a number, on every surface (card, dashboard, CLI, chat
replies, refusals): one display zone, named on every time; amounts grouped by thousands, at
their precision. Pure, except `local_zone`, which reads the machine's zone.

Only what is shown goes through here: wire values stay ISO-8601 UTC and decimal text as
filed (what is digested never changes), so a value shown is always the value stored,
grouped and padded, never rounded.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, tzinfo
from decimal import Context, Decimal
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# the zone name that means "this machine's own" ([cards] timezone's default)
LOCAL = "local"
ZONEINFO = "zoneinfo/"
# the places a currency is shown to (more where the value has more: never rounded); a
# currency not named here shows the digits it has, trailing zeros dropped
CURRENCY_PLACES: dict[str, int] = {
    "USD": 2,
    "USDC": 2,
    "USDT": 2,
    "USDE": 2,
    "USDH": 2,
    "EUR": 2,
    "GBP": 2,
    "CNY": 2,
    "HKD": 2,
    "SGD": 2,
    "JPY": 0,
}
DECIMAL_TEXT = re.compile(r"[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?")
# room for every digit a value has: padding to places never rounds, nor raises
WIDE = Context(prec=400)
CURRENCY_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9]{1,11}")


# -- zones ------------------------------------------------------------------------------------


def _named_local() -> str | None:
    """The machine's zone by its IANA name: TZ, else /etc/localtime's link, else
    /etc/timezone (None: none of them names one)."""
    given = os.environ.get("TZ", "").lstrip(":")
    if given:
        return given
    try:
        target = str(Path("/etc/localtime").resolve())
    except OSError:
        target = ""
    if ZONEINFO in target:
        return target.split(ZONEINFO, 1)[1]
    try:
        return Path("/etc/timezone").read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def local_zone() -> tzinfo:
    """This machine's zone: by its IANA name where one is known (its daylight saving kept),
    else the fixed offset it has now."""
    name = _named_local()
    if name:
        try:
            return UTC if name.upper() in ("UTC", "ETC/UTC") else ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    found = datetime.now().astimezone().tzinfo
    return found if found is not None else UTC


def zone(name: str) -> tzinfo:
    """The display zone a setting names: "local" (or nothing) this machine's, "UTC", or an
    IANA name; ValueError if it names none."""
    if not name or name.lower() == LOCAL:
        return local_zone()
    if name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(name) from None


def _moment(at: datetime | str) -> datetime:
    if isinstance(at, str):
        return datetime.fromisoformat(at.replace("Z", "+00:00")).astimezone(UTC)
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def zone_name(moment: datetime) -> str:
    """A zone's abbreviation at that moment ("CST", "CET"), or its offset ("+08") where the
    zone has no letters for it; never empty."""
    name = moment.tzname() or ""
    if name.startswith("UTC") and len(name) > 3:  # a fixed offset's "UTC+08:00"
        name = name[3:]
    return name or "UTC"


def when(at: datetime | str, tz: tzinfo = UTC) -> str:
    """An absolute time to the minute, with its zone: "2026-12-07 18:00 CST"."""
    moment = _moment(at).astimezone(tz)
    return moment.strftime("%Y-%m-%d %H:%M ") + zone_name(moment)


def clock(at: datetime | str, tz: tzinfo = UTC) -> str:
    """A time of day, with its zone: "18:00 CST" (where the day goes without saying)."""
    moment = _moment(at).astimezone(tz)
    return moment.strftime("%H:%M ") + zone_name(moment)


# -- numbers ----------------------------------------------------------------------------------


def decimal_of(value: object) -> Decimal | None:
    """A finite Decimal from a number or its text ("60000.00", "50,000"); None if it is none
    (a bool is no number)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, Decimal):
        found = value
    elif isinstance(value, int):
        found = Decimal(value)
    elif isinstance(value, float):
        found = Decimal(repr(value))
    elif isinstance(value, str) and DECIMAL_TEXT.fullmatch(value.strip()):
        found = Decimal(value.strip().replace(",", ""))
    else:
        return None
    return found if found.is_finite() else None


def _decimals(value: Decimal) -> int:
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)  # finite
    return max(0, -exponent)


def grouped(value: Decimal, places: int | None = None) -> str:
    """`value` with thousands separators: its own decimals (`places` None), or at least
    `places` of them, trailing zeros beyond those dropped. Never rounded."""
    if places is not None:
        significant = _decimals(value.normalize(WIDE)) if value else 0
        value = value.quantize(Decimal(1).scaleb(-max(places, significant)), context=WIDE)
    text = format(value, ",f")
    return "0" + text[2:] if text.startswith("-0") and not value else text  # no "-0"


def number(value: object, places: int | None = None) -> str:
    """A quantity or price as every surface shows it: grouped, its own decimals (as the
    venue took it) unless `places` asks for more; text that is not a number stays as it is."""
    found = decimal_of(value)
    return str(value) if found is None else grouped(found, places)


def currency_places(currency: str) -> int:
    return CURRENCY_PLACES.get(currency.upper(), 0)


def money(value: object, currency: str | None) -> str:
    """An amount in a currency to its precision: "60,000.00 USDC", "0.118 USDC" (more
    decimals only where the value has them), "27.00 USDC" (not "27.0000000")."""
    found = decimal_of(value)
    if found is None:
        shown = str(value)
    else:
        shown = grouped(found, currency_places(currency) if currency else 0)
    return f"{shown} {currency}" if currency else shown


def amount_text(text: str) -> str:
    """An amount as the store keeps its words ("60000.00 USDC", "50,000 USDC", "30"), shown
    as `money` shows it; words that are no amount ("unknown USDC") stay as they are."""
    value, _, currency = text.strip().partition(" ")
    if decimal_of(value) is None or (currency and not CURRENCY_TEXT.fullmatch(currency)):
        return text
    return money(value, currency or None)
