"""Sign in with Lark on the dashboard, against the real sandbox as Lark: the authorization-code
flow with state and PKCE, server-side sessions in HttpOnly cookies, idle and absolute
lifetimes on the store's clock, sign-out, and reading /ops by tenant (issue 15, items 1, 5).

The app has a dashboard token configured, so a loopback client without it is refused: what
lets these requests in is the session alone."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
from sqlalchemy import func, select
from yarl import URL

from bot.api.signin import SESSION_COOKIE, STATE_COOKIE
from store import Store, WebSessionRow
from tests.support.lark_oauth import decide, open_page
from tests.support.sandbox import Sandbox
from tests.support.signin import DASHBOARD_TOKEN, SignInBot, browsing, sign_in_bot

IDLE_S, MAX_S = 1800, 43200  # the defaults of [web]


@pytest.fixture
async def bot(sandbox: Sandbox, store: Store, tmp_path: Path) -> AsyncIterator[SignInBot]:
    async with sign_in_bot(sandbox, store, tmp_path) as found:
        yield found


async def session_rows(store: Store) -> int:
    async with store.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(WebSessionRow))).scalar())


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, html
    return found[1]


async def test_alice_signs_in_and_reads_every_page_as_herself(bot: SignInBot) -> None:
    async with browsing(bot) as browser:
        refused = await browser.get("/ops")
        sign_in = 'id="sign-in" href="/ops/auth/sign-in?next=%2Fops"'  # and back to /ops
        assert refused.status == 403 and sign_in in refused.html

        authorize = await browser.start()
        sent = urlsplit(authorize)
        params = dict(parse_qsl(sent.query))
        assert authorize.startswith(f"{bot.sandbox.base_url}/open-apis/authen/v1/authorize?")
        assert params["client_id"] == bot.sandbox.app.app_id
        assert params["response_type"] == "code"
        assert params["redirect_uri"] == f"{bot.url}/ops/auth/callback"
        assert params["code_challenge_method"] == "S256" and len(params["code_challenge"]) == 43
        assert len(params["state"]) >= 32 and browser.cookie(STATE_COOKIE) == params["state"]

        landed = await browser.get(await browser.approve(authorize, "ou_alice"))
        assert landed.status == 302 and landed.location == "/ops"
        for path in ("/ops", "/ops/all", "/ops/nothing-here"):
            page = await browser.get(path)
            assert page.status in (200, 404) and 'id="who">Alice</span>' in page.html, path
            assert 'id="sign-out"' in page.html and 'id="sign-in"' not in page.html
        token = browser.cookie(SESSION_COOKIE)
        assert token and token not in page.html and DASHBOARD_TOKEN not in page.html
        assert bot.sandbox.app.app_secret not in page.html
    # the code was exchanged with the JSON body Lark documents (the sandbox reads forms too)
    [issued] = bot.sandbox.state.oauth.tokens.values()
    assert (issued.open_id, issued.body_type) == ("ou_alice", "json")


async def test_the_session_cookie_is_httponly_lax_on_ops_and_the_state_cookie_goes(
    bot: SignInBot,
) -> None:
    async with browsing(bot) as browser:
        landed = await browser.sign_in("ou_alice")
        cookie = landed.set_cookies[SESSION_COOKIE]
        assert cookie["httponly"] and cookie["samesite"] == "Lax" and cookie["path"] == "/ops"
        assert not cookie["secure"]  # http on loopback (dev); https is the next test
        assert int(cookie["max-age"]) == MAX_S
        assert landed.set_cookies[STATE_COOKIE].value == ""  # deleted


async def test_the_cookie_is_secure_when_the_page_came_over_https(bot: SignInBot) -> None:
    async with browsing(bot) as browser:
        callback = await browser.approve(await browser.start(), "ou_alice")
        async with browser.http.get(
            callback, headers={"X-Forwarded-Proto": "https"}, allow_redirects=False
        ) as response:
            assert response.status == 302
            [cookie] = [h for h in response.headers.getall("Set-Cookie") if SESSION_COOKIE in h]
            assert "Secure" in cookie and "HttpOnly" in cookie


async def test_the_cookie_is_secure_when_the_public_url_is_https(
    sandbox: Sandbox, store: Store, tmp_path: Path
) -> None:
    """Behind an https proxy that says nothing: the configured public URL decides."""
    async with sign_in_bot(sandbox, store, tmp_path, "https://countersign.example.com") as bot:
        async with browsing(bot) as browser:
            link = await browser.approve(await browser.start(), "ou_alice")
            assert link.startswith("https://countersign.example.com/ops/auth/callback?")
            local = bot.url + link.removeprefix("https://countersign.example.com")
            # the state cookie came Secure too; over https the browser would send it back
            state = browser.cookie(STATE_COOKIE)
            assert state is not None
            async with browser.http.get(
                local, allow_redirects=False, headers={"Cookie": f"{STATE_COOKIE}={state}"}
            ) as response:
                assert response.status == 302
                [cookie] = [h for h in response.headers.getall("Set-Cookie") if SESSION_COOKIE in h]
                assert "Secure" in cookie and "HttpOnly" in cookie


async def test_a_callback_from_another_browser_or_with_another_state_is_refused(
    bot: SignInBot, store: Store
) -> None:
    async with browsing(bot) as victim, browsing(bot) as attacker:
        # the attacker's own callback link, opened in the victim's browser (login CSRF)
        link = await attacker.approve(await attacker.start(), "ou_mallory")
        refused = await victim.get(link)
        assert refused.status == 400 and "not started in this browser" in refused.html
        # a state of this browser's, but not the one Lark echoed
        await victim.start()
        forged = re.sub(r"state=[^&]+", "state=forged", link)
        assert (await victim.get(forged)).status == 400
        assert await session_rows(store) == 0 and victim.cookie(SESSION_COOKIE) is None


async def test_a_code_or_a_state_is_used_once(bot: SignInBot, store: Store) -> None:
    async with browsing(bot) as browser:
        callback = await browser.approve(await browser.start(), "ou_alice")
        assert (await browser.get(callback)).status == 302
        state = dict(parse_qsl(urlsplit(callback).query))["state"]
        browser.http.cookie_jar.update_cookies(
            {STATE_COOKIE: state},
            response_url=URL(bot.url + "/ops/auth/"),
        )
        again = await browser.get(callback)  # the same state (and code) once more
        assert again.status == 400 and "used already" in again.html
        assert await session_rows(store) == 1

        # a fresh state with a code Lark has already exchanged: Lark refuses it (20065)
        used_code = dict(parse_qsl(urlsplit(callback).query))["code"]
        fresh = await browser.start()
        fresh_state = dict(parse_qsl(urlsplit(fresh).query))["state"]
        replay = f"{bot.url}/ops/auth/callback?code={used_code}&state={fresh_state}"
        refused = await browser.get(replay)
        assert refused.status == 502 and "Lark refused the sign-in (invalid_grant)" in refused.html
        assert used_code not in refused.html
        assert await session_rows(store) == 1


async def test_deny_on_lark_signs_nobody_in(bot: SignInBot, store: Store) -> None:
    async with browsing(bot) as browser:
        authorize = await browser.start()
        sent = await decide(
            await open_page(bot.sandbox, authorize), bot.sandbox, "ou_alice", "deny"
        )
        refused = await browser.get(sent.location or "")
        assert refused.status == 403 and await session_rows(store) == 0


async def test_an_idle_session_ends_and_so_does_an_old_one(bot: SignInBot) -> None:
    async with browsing(bot) as browser:
        await browser.sign_in("ou_alice")
        bot.clock.advance(IDLE_S - 1)
        assert (await browser.get("/ops")).status == 200  # used: seen now
        bot.clock.advance(IDLE_S)
        idle = await browser.get("/ops")
        assert idle.status == 403 and 'id="sign-in"' in idle.html

        await browser.sign_in("ou_alice")
        for _ in range(MAX_S // (IDLE_S // 2) - 1):
            bot.clock.advance(IDLE_S // 2)
            assert (await browser.get("/ops/all")).status == 200
        bot.clock.advance(IDLE_S // 2)
        assert (await browser.get("/ops/all")).status == 403  # 12 h after sign-in, however busy


async def test_the_long_poll_does_not_keep_a_session_alive(bot: SignInBot) -> None:
    async with browsing(bot) as browser:
        await browser.sign_in("ou_alice")
        for _ in range(2):
            bot.clock.advance(IDLE_S / 3)  # each well past a minute: a page would be a sighting
            assert (await browser.get("/ops/changes?since=x")).status == 200
        bot.clock.advance(IDLE_S / 3)
        assert (await browser.get("/ops")).status == 403


async def test_sign_out_needs_the_csrf_token_and_ends_the_session(
    bot: SignInBot, store: Store
) -> None:
    async with browsing(bot) as browser:
        await browser.sign_in("ou_alice")
        page = await browser.get("/ops")
        token = browser.cookie(SESSION_COOKIE)
        assert (await browser.request("POST", "/ops/auth/sign-out", {})).status == 403
        forged = await browser.request("POST", "/ops/auth/sign-out", {"csrf": "forged"})
        assert forged.status == 403 and (await browser.get("/ops")).status == 200

        out = await browser.request("POST", "/ops/auth/sign-out", {"csrf": csrf_of(page.html)})
        assert out.status == 303 and out.location == "/ops"
        assert browser.cookie(SESSION_COOKIE) in (None, "")
        assert (await browser.get("/ops")).status == 403
    async with browsing(bot) as replay:  # the old cookie, kept by someone: ended too
        assert token is not None
        replay.http.cookie_jar.update_cookies({SESSION_COOKIE: token}, URL(bot.url + "/ops"))
        assert (await replay.get("/ops")).status == 403
    assert await session_rows(store) == 1  # revoked, kept until its lifetime is over


async def test_a_session_of_another_tenant_is_refused_with_a_way_out(bot: SignInBot) -> None:
    async with browsing(bot) as browser:
        landed = await browser.sign_in("ou_eve")  # tenant other-tenant, not in tenant_keys
        assert landed.status == 302
        for path in ("/ops", "/ops/all", "/ops/changes?since=x"):
            refused = await browser.get(path)
            assert refused.status == 403, path
        refused = await browser.get("/ops")
        assert 'id="who">Eve</span>' in refused.html and "does not serve" in refused.html
        # the dashboard token does not make another tenant's session someone else
        assert (await browser.get(f"/ops?token={DASHBOARD_TOKEN}")).status == 403
        out = await browser.request("POST", "/ops/auth/sign-out", {"csrf": csrf_of(refused.html)})
        assert out.status == 303
        assert (await browser.get(f"/ops?token={DASHBOARD_TOKEN}")).status == 200


async def test_without_a_session_the_dashboard_token_still_reads(bot: SignInBot) -> None:
    async with browsing(bot) as browser:
        page = await browser.get(f"/ops?token={DASHBOARD_TOKEN}")
        assert page.status == 200 and 'id="sign-in"' in page.html and 'id="who"' not in page.html
