"""The dashboard holds against framing and floods (issue 30, item 5; item 6's 5xx): every HTML
page says it may not be framed and may not be stored; sign-in starts and decision posts are
rate-limited per client address and per signed-in person (a 429 page with Retry-After,
nothing written); a non-operator's flood of refused posts is one refusal row with a count;
a body that is no readable form is a 400 on sign-out and on a decision, never a 5xx.

The bot's real app with sign-in on, the real sandbox as Lark, real SQLite or PostgreSQL.
Other clients are other loopback addresses (127.0.0.2, ...), as Linux routes all of 127/8."""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp import ClientResponse
from sqlalchemy import func, select
from yarl import URL

from bot.api.signin import SESSION_COOKIE
from bot.api.web_limits import DECISION_POSTS, SIGN_IN_STARTS
from kernel.reasons import Reason
from store import AuditRow, Operation, State, Store, WebSignInRow
from tests.support.factories import offered
from tests.support.sandbox import Sandbox
from tests.support.signin import Browser, SignInBot, browsing, sign_in_bot

FRAMING = {"Content-Security-Policy": "frame-ancestors 'none'", "X-Frame-Options": "DENY"}
MALFORMED = (  # (Content-Type, body): each a form aiohttp's parser cannot read
    ("multipart/form-data", b"csrf=x"),  # no boundary
    ("multipart/form-data; boundary=zz", b"no boundary in here"),
    (
        "multipart/form-data; boundary=zz",
        b"--zz\r\nContent-Disposition: form-data\r\n\r\nx\r\n--zz--\r\n",
    ),
    ("multipart/form-data; boundary=zz", b"--zz\r\nbroken header\r\n\r\nx\r\n--zz--\r\n"),
    (
        "multipart/form-data; boundary=zz",
        b"--zz\r\nContent-Disposition: form-data; name=csrf\r\n\r\nx",
    ),
    (
        "multipart/form-data; boundary=zz",
        b"--zz\r\nContent-Disposition: form-data; name=csrf\r\n"
        b"Content-Type: text/plain; charset=no-such-charset\r\n\r\nx\r\n--zz--\r\n",
    ),
    (
        "multipart/form-data; boundary=zz",
        b"--zz\r\nContent-Disposition: form-data; name=csrf\r\n"
        b"Content-Transfer-Encoding: no-such-encoding\r\n\r\nx\r\n--zz--\r\n",
    ),
)


@pytest.fixture
async def bot(sandbox: Sandbox, store: Store, tmp_path: Path) -> AsyncIterator[SignInBot]:
    async with sign_in_bot(sandbox, store, tmp_path) as found:
        yield found


@pytest.fixture
async def op(store: Store) -> Operation:
    return await offered(store)  # operators ou_alice and ou_bob; Mallory is none


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, html
    return found[1]


@dataclass
class Seen:
    status: int
    headers: dict[str, str]
    text: str


async def seen(response: ClientResponse) -> Seen:
    return Seen(response.status, dict(response.headers), await response.text())


async def get(browser: Browser, path: str) -> Seen:
    async with browser.http.get(browser.bot.url + path, allow_redirects=False) as response:
        return await seen(response)


async def post(
    browser: Browser, path: str, data: dict[str, str] | bytes, content_type: str | None = None
) -> Seen:
    headers = {"Origin": browser.bot.url}
    if content_type is not None:
        headers["Content-Type"] = content_type
    async with browser.http.post(
        browser.bot.url + path, data=data, headers=headers, allow_redirects=False
    ) as response:
        return await seen(response)


def decision(op: Operation, csrf: str, action: str = "confirm") -> dict[str, str]:
    """A decision form as the page renders it, with a fresh form key (a script's choice)."""
    return {
        "action": action,
        "digest": op.confirm_digest,
        "csrf": csrf,
        "form_key": secrets.token_urlsafe(24),
        "lang": "en",
    }


async def signed_in_csrf(browser: Browser, user: str) -> str:
    landed = await browser.sign_in(user)
    assert landed.status == 302, landed.html
    return csrf_of((await get(browser, "/ops")).text)


def assert_protected(page: Seen, where: str) -> None:
    for name, value in FRAMING.items():
        assert page.headers.get(name) == value, (where, page.headers)
    if page.headers.get("Content-Type", "").startswith("text/html"):
        assert page.headers.get("Cache-Control") == "no-store", (where, page.headers)


# -- headers on every HTML page -------------------------------------------------------------


async def test_every_html_page_refuses_framing_and_caching(bot: SignInBot, op: Operation) -> None:
    async with browsing(bot) as alice, browsing(bot) as anonymous:
        csrf = await signed_in_csrf(alice, "ou_alice")
        pages: dict[str, tuple[Seen, int]] = {
            "attention": (await get(alice, "/ops"), 200),
            "list": (await get(alice, "/ops/all"), 200),
            "detail with the decision forms": (await get(alice, f"/ops/{op.id}"), 200),
            "not found": (await get(alice, "/ops/no-such-operation"), 404),
            "refused (nobody signed in)": (await get(anonymous, "/ops"), 403),
            "sign-in refused": (await get(anonymous, "/ops/auth/callback?state=x"), 400),
            "decision refused": (
                await post(anonymous, f"/ops/{op.id}/decide", decision(op, "x")),
                403,
            ),
            "decision answered (redirect)": (
                await post(alice, f"/ops/{op.id}/decide", decision(op, csrf, "reject")),
                303,
            ),
            "sign-in start (redirect)": (await get(anonymous, "/ops/auth/sign-in"), 302),
        }
        for where, (page, status) in pages.items():
            assert page.status == status, (where, page.status, page.text)
            assert_protected(page, where)
        html = [
            where
            for where, (page, _) in pages.items()
            if "text/html" in page.headers.get("Content-Type", "")
        ]
        assert len(html) == 7, html  # the redirects are no pages
        assert 'name="csrf"' in pages["detail with the decision forms"][0].text


# -- a body that is no form -----------------------------------------------------------------


async def test_a_malformed_multipart_body_is_a_400_on_sign_out_and_decide(
    bot: SignInBot, op: Operation, store: Store
) -> None:
    async with browsing(bot) as alice, browsing(bot) as anonymous:
        await signed_in_csrf(alice, "ou_alice")
        for content_type, body in MALFORMED:
            for who in (alice, anonymous):
                answer = await post(who, "/ops/auth/sign-out", body, content_type)
                assert answer.status == 400, (content_type, body, answer.text)
                assert "could not be read" in answer.text and "Not signed out" in answer.text
            answer = await post(alice, f"/ops/{op.id}/decide", body, content_type)
            assert answer.status == 400, (content_type, body, answer.text)
            assert "could not be read" in answer.text and "Nothing was recorded" in answer.text
            assert_protected(answer, content_type)
        # still signed in, nothing decided or recorded
        assert 'id="who">Alice</span>' in (await get(alice, "/ops")).text
    after = await store.get(op.id)
    assert after is not None and after.state is State.AWAITING_CONFIRMATION
    assert await store.confirmations(op.id) == []


# -- sign-in starts ---------------------------------------------------------------------------


async def sign_in_rows(store: Store) -> int:
    async with store.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(WebSignInRow))).scalar())


async def test_sign_in_starts_are_limited_per_address_and_nothing_is_written_past_it(
    bot: SignInBot, store: Store
) -> None:
    burst = SIGN_IN_STARTS.per_address.burst
    async with browsing(bot, "127.0.0.2") as flooder, browsing(bot, "127.0.0.3") as other:
        answers = [await get(flooder, "/ops/auth/sign-in") for _ in range(burst + 15)]
        statuses = [answer.status for answer in answers]
        assert statuses == [302] * burst + [429] * 15, statuses
        refused = answers[-1]
        assert int(refused.headers["Retry-After"]) >= 1
        assert "Too many sign-in starts" in refused.text and "Nothing was recorded" in refused.text
        assert await sign_in_rows(store) == burst
        # another address is another bucket: it signs in
        assert (await other.sign_in("ou_alice")).status == 302


async def test_sign_in_starts_are_limited_per_person_across_addresses(
    bot: SignInBot, store: Store
) -> None:
    """A signed-in person starting sign-in again from address after address (the session
    cookie carried along) is one bucket."""
    burst = SIGN_IN_STARTS.per_person.burst
    async with browsing(bot, "127.0.0.4") as mallory:
        await signed_in_csrf(mallory, "ou_mallory")  # signed out then: her address's only
        session = mallory.cookie(SESSION_COOKIE)
        assert session
        statuses = []
        for n in range(burst + 3):
            async with browsing(bot, f"127.0.1.{n + 1}") as elsewhere:
                elsewhere.http.cookie_jar.update_cookies(
                    {SESSION_COOKIE: session}, URL(bot.url + "/ops/")
                )
                statuses.append((await get(elsewhere, "/ops/auth/sign-in")).status)
        assert statuses == [302] * burst + [429] * 3, statuses


# -- decision posts -----------------------------------------------------------------------------


async def refused_rows(store: Store, operation_id: str) -> list[tuple[str, int, bool]]:
    return [
        (c.operator_open_id, c.refusals, c.accepted)
        for c in await store.confirmations(operation_id)
    ]


async def audited_refusals(store: Store, operation_id: str) -> int:
    async with store.read() as conn:
        query = (
            select(func.count())
            .select_from(AuditRow)
            .where(AuditRow.operation_id == operation_id, AuditRow.event == "click_refused")
        )
        return int((await conn.execute(query)).scalar())


async def test_a_non_operators_flood_is_limited_and_recorded_once_with_a_count(
    bot: SignInBot, store: Store, op: Operation
) -> None:
    burst = DECISION_POSTS.per_person.burst
    async with browsing(bot, "127.0.0.5") as mallory, browsing(bot) as alice:
        csrf = await signed_in_csrf(mallory, "ou_mallory")
        # the store's clock held still: no token refills however long the posts take
        moment = store.clock()
        store.clock = lambda: moment  # type: ignore[method-assign]
        answers = [
            await post(mallory, f"/ops/{op.id}/decide", decision(op, csrf, action))
            for action in ("confirm", "reject") * ((burst + 10) // 2)
        ]
        statuses = [answer.status for answer in answers]
        assert statuses == [303] * burst + [429] * 10, statuses
        assert int(answers[-1].headers["Retry-After"]) >= 1
        assert "Too many decision posts from you" in answers[-1].text
        # every refused post is in the one row's count; the audit says it once
        assert await refused_rows(store, op.id) == [("ou_mallory", burst, False)]
        [row] = await store.confirmations(op.id)
        assert row.reason_code == Reason.OPERATOR_NOT_ALLOWED.value and row.entry == "web"
        assert await audited_refusals(store, op.id) == 1
        # the page shows the one row, counted; it does not grow with the flood
        await signed_in_csrf(alice, "ou_alice")
        page = (await get(alice, f"/ops/{op.id}")).text
        assert f"refused \u00d7{burst}" in page
        assert page.count("ou_mallory") + page.count("Mallory") <= 2, page
    after = await store.get(op.id)
    assert after is not None and after.state is State.AWAITING_CONFIRMATION
    assert await store.claim_count(op.id) == 0


async def test_people_keep_their_own_refusal_rows_and_a_later_confirm_still_counts(
    bot: SignInBot, store: Store, op: Operation
) -> None:
    async with browsing(bot) as mallory, browsing(bot) as alice:
        mallory_csrf = await signed_in_csrf(mallory, "ou_mallory")
        alice_csrf = await signed_in_csrf(alice, "ou_alice")
        for _ in range(3):
            assert (
                await post(mallory, f"/ops/{op.id}/decide", decision(op, mallory_csrf))
            ).status == 303
        for _ in range(2):  # a stale digest: refused, hers (a new form key each: no replay)
            stale = {**decision(op, alice_csrf), "digest": "0" * 64}
            assert (await post(alice, f"/ops/{op.id}/decide", stale)).status == 303
        assert (await post(alice, f"/ops/{op.id}/decide", decision(op, alice_csrf))).status == 303
    rows = sorted(await refused_rows(store, op.id))
    assert rows == [("ou_alice", 1, True), ("ou_alice", 2, False), ("ou_mallory", 3, False)]
    assert await store.claim_count(op.id) == 1
    assert await audited_refusals(store, op.id) == 2


async def test_decision_posts_are_limited_per_address_before_anything_is_read(
    bot: SignInBot, store: Store, op: Operation
) -> None:
    burst = DECISION_POSTS.per_address.burst
    async with browsing(bot, "127.0.0.6") as anonymous, browsing(bot, "127.0.0.7") as alice:
        statuses = [
            (await post(anonymous, f"/ops/{op.id}/decide", decision(op, "x"))).status
            for _ in range(burst + 5)
        ]
        assert statuses == [403] * burst + [429] * 5, statuses
        # another address decides
        csrf = await signed_in_csrf(alice, "ou_alice")
        assert (await post(alice, f"/ops/{op.id}/decide", decision(op, csrf))).status == 303
    assert await store.claim_count(op.id) == 1


async def test_refused_posts_at_the_same_moment_are_one_row_counting_each(
    bot: SignInBot, store: Store, op: Operation
) -> None:
    """Concurrent posts (each its own inbox entry and write): the database's upsert, not a
    read before the write, keeps them one row; none is lost from the count."""
    posts = 20
    async with browsing(bot) as mallory:
        csrf = await signed_in_csrf(mallory, "ou_mallory")
        answers = await asyncio.gather(
            *(post(mallory, f"/ops/{op.id}/decide", decision(op, csrf)) for _ in range(posts))
        )
        assert [answer.status for answer in answers] == [303] * posts
    assert await refused_rows(store, op.id) == [("ou_mallory", posts, False)]
    assert await audited_refusals(store, op.id) == 1
