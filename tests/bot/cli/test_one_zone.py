"""One display zone on every surface: the card, the dashboard's page and `countersign show`
give the same moment in the zone the config names ([cards] timezone), with its name; the API's
JSON keeps ISO-8601 UTC. And `cancel` refused says the state in list's and show's words."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta
from html import unescape
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.api.dashboard_html import detail_html
from bot.cli.api_commands import zone_of
from bot.cli.render import operation_text
from cards.render import render_card
from store import Store, operation_view
from tests.support.cards import FixedClock, finance_op, said

T0 = datetime(2025, 3, 1, 1, 30, tzinfo=UTC)
RECORDS = {"confirmations": [], "attempt": None, "card": [], "deliveries": []}


@pytest.fixture
def clock(store: Store) -> FixedClock:
    fixed = FixedClock(T0)
    store.clock = fixed
    return fixed


def args_with(config: Path) -> argparse.Namespace:
    return argparse.Namespace(config=str(config))


async def test_the_card_the_dashboard_and_show_give_one_time_in_the_configured_zone(
    store: Store, clock: FixedClock, tmp_path: Path
) -> None:
    config = tmp_path / "countersign.toml"
    config.write_text('[cards]\nlang = "en"\ntimezone = "Asia/Shanghai"\n', encoding="utf-8")
    tz = zone_of(args_with(config))
    assert tz == ZoneInfo("Asia/Shanghai")
    view = operation_view(await finance_op(store))
    assert view.expires_at == "2025-03-01T01:45:00Z"  # the wire: UTC, as it was
    expected = "2025-03-01 09:45 CST"

    card = render_card(view, now=T0, tz=tz)
    assert said(card, "expires") == f"Expires at {expected}"
    page = detail_html(view, RECORDS, "en", "-", now=T0, tz=tz)
    found = re.search(r'<ul class="lines" id="lines">(.*?)</ul>', page, re.S)
    assert found is not None
    shown = unescape(re.sub(r"<[^>]+>", "", found[1]))
    assert f"Expires at {expected}" in shown
    # the open operation's page reloads each minute: it may say how long, after the time
    assert f"{expected} (in 15 min)" in shown
    printed = operation_text(view, now=T0, tz=zone_of(args_with(config)))
    assert f"  Expires at {expected} (in 15 min)" in printed
    # nothing shows a time without its zone, nor in another zone
    for surface in (said(card, "expires") or "", shown, printed):
        for moment in re.findall(r"\d{4}-\d\d-\d\d \d\d:\d\d(?: \S+)?", surface):
            assert moment.endswith(" CST"), (moment, surface)


async def test_without_a_zone_every_surface_uses_this_machines(
    store: Store, clock: FixedClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "Europe/Paris")
    config = tmp_path / "countersign.toml"
    config.write_text('[cards]\nlang = "en"\n', encoding="utf-8")
    assert zone_of(args_with(config)) == ZoneInfo("Europe/Paris")
    assert zone_of(args_with(tmp_path / "none.toml")) == ZoneInfo("Europe/Paris")
    view = operation_view(await finance_op(store))
    printed = operation_text(view, now=T0 + timedelta(minutes=5), tz=zone_of(args_with(config)))
    assert "  Expires at 2025-03-01 02:45 CET (in 10 min)" in printed
