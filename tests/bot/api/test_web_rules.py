"""The web decision's own rules (bot/api/web_rules.py), one by one: whose page posted the form
(Origin, else Referer), when a Confirm needs a fresh sign-in, and which buttons a person is
offered (bot/decide/provenance.py: the card's checks without the two that ask where the card
was)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.api.hosts import moved_to
from bot.api.web_rules import needs_reauth, reauth_due, return_path, same_origin
from bot.config.settings import WebSettings
from bot.decide.provenance import Context, may_decide
from store import Approval, Audience, Source, Store
from tests.support.factories import offered

PUBLIC = "https://ops.example.com"
NOW = datetime(2026, 12, 5, 10, 0, tzinfo=UTC)
TRIO = Audience("ops", "oc_ops", ("ou_alice", "ou_bob", "ou_carol"))


@pytest.mark.parametrize(
    ("headers", "ours"),
    [
        ({"Origin": "https://ops.example.com"}, True),
        ({"Referer": "https://ops.example.com/ops/01ABC?lang=en"}, True),
        ({"Origin": "https://ops.example.com:8443"}, False),
        ({"Origin": "http://ops.example.com"}, False),
        ({"Origin": "https://ops.example.com.evil.test"}, False),
        ({"Origin": "null"}, False),
        ({"Origin": "not a url"}, False),
        ({}, False),
        # a browser's Origin is the truth; a Referer cannot vouch for another origin's post
        ({"Origin": "https://evil.test", "Referer": "https://ops.example.com/ops/1"}, False),
    ],
)
def test_only_a_page_of_ours_may_post(headers: dict[str, str], ours: bool) -> None:
    assert same_origin(headers, PUBLIC) is ours


@pytest.mark.parametrize(
    ("asked", "back"),
    [
        ("/ops", "/ops"),
        ("/ops/01ABCDEF", "/ops/01ABCDEF"),
        ("/ops/01ABCDEF?lang=zh", "/ops/01ABCDEF?lang=zh"),
        ("/ops/all?lang=en", "/ops/all?lang=en"),
        ("/ops/01ABCDEF?lang=zh&x=1", "/ops/01ABCDEF"),  # only the language is kept
        # never another site, nor the sign-in flow or the long poll
        ("https://evil.example/ops", None),
        ("//evil.example/ops", None),
        ("/\\evil.example", None),
        ("/ops/../../x", None),
        ("/ops/a/b", None),
        ("/ops/auth", None),
        ("/ops/changes", None),
        ("/opsx", None),
        ("/ops/\u00e9", None),
        ("", None),
    ],
)
def test_a_sign_in_returns_only_to_a_page_of_the_dashboard(asked: str, back: str | None) -> None:
    assert return_path(asked) == back


@pytest.mark.parametrize(
    ("host", "public", "proxy", "moved"),
    [
        ("localhost:8080", "http://127.0.0.1:8080", False, "http://127.0.0.1:8080"),
        ("[::1]:8080", "http://127.0.0.1:8080", False, "http://127.0.0.1:8080"),
        ("127.0.0.1:8080", "http://127.0.0.1:8080", False, None),
        ("LOCALHOST.:8080", "http://localhost:8080", False, None),
        # behind a proxy, or reached on another port (a proxy in front): never moved, or a
        # proxy sending the upstream's Host would be sent round in circles
        ("localhost:8080", "http://127.0.0.1:8080", True, None),
        ("127.0.0.1:8080", "https://ops.example.com", False, None),
        (None, "http://127.0.0.1:8080", False, None),
    ],
)
def test_the_same_server_under_another_name_is_sent_to_the_public_url(
    host: str | None, public: str, proxy: bool, moved: str | None
) -> None:
    assert moved_to(host, "http", public, proxy) == moved


def web(**changes: str | int | None) -> WebSettings:
    return WebSettings.model_validate({"public_url": PUBLIC, **changes})


@pytest.mark.parametrize(
    ("notional", "settings", "asks"),
    [
        ("62000.00 USDC", {"reauth_above": "50000"}, True),
        ("600.00 USDC", {"reauth_above": "50000"}, False),
        ("50000 USDC", {"reauth_above": "50000"}, False),  # above, not at
        ("unknown USDC", {"reauth_above": "50000"}, True),  # fails closed
        ("600.00 EUR", {"reauth_above": "50000"}, True),  # another currency: fails closed
        (None, {"reauth_above": "50000"}, False),  # a message has no notional
        ("62000.00 USDC", {}, False),  # never asked unless configured
    ],
)
async def test_a_confirm_above_the_threshold_needs_a_recent_sign_in(
    store: Store, notional: str | None, settings: dict[str, str], asks: bool
) -> None:
    op = await offered(store, approval=Approval(notional=notional))
    config = web(**settings)
    assert needs_reauth(op, config) is asks
    fresh, stale = NOW - timedelta(seconds=60), NOW - timedelta(seconds=config.reauth_within_s + 1)
    assert reauth_due(op, config, fresh, NOW) is False
    assert reauth_due(op, config, stale, NOW) is asks


async def test_the_buttons_offered_follow_the_cards_checks(store: Store) -> None:
    ctx = Context(app_id="cli_x", tenant_keys=frozenset({"tenant_a"}), now=NOW)
    op = await offered(
        store,
        audience=TRIO,
        approval=Approval(approvers=("ou_alice",)),
        source=Source("dev-agent", "web-rules", "ou_carol"),
    )

    def offered_to(open_id: str) -> dict[str, bool]:
        return may_decide(op, open_id, "tenant_a", ctx)

    assert offered_to("ou_alice") == {"confirm": True, "reject": True}
    # a rule narrowed who may confirm; any operator may still reject
    assert offered_to("ou_bob") == {"confirm": False, "reject": True}
    # the requester decides nothing of their own; nor does anyone outside the audience
    assert offered_to("ou_carol") == {"confirm": False, "reject": False}
    assert offered_to("ou_mallory") == {"confirm": False, "reject": False}
