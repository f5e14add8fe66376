"""Deciding on /ops/{id} in tests: a browser signed in against a stack's sandbox, the page's
decision forms as it rendered them, and the form posts (with the Origin a browser sends)."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any

from bot.api.signin import SESSION_COOKIE
from tests.support.sandbox import Sandbox
from tests.support.signin import Answer, Browser, browsing
from tests.support.stack import Stack

# the Confirm form also carries its dialog's words (data-ask)
FORM = re.compile(
    r'<form method="post" action="([^"]+)" class="decide[^"]*"[^>]*>(.*?)</form>', re.S
)
HIDDEN = re.compile(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)">')
FLASH = re.compile(
    r'<p id="flash" class="flash ([a-z-]+)" role="status"(?: data-reason="([a-z_]+)")?>'
)


@dataclass
class Site:
    url: str
    sandbox: Sandbox


def site(stack: Stack) -> Site:
    return Site(stack.bot_url, Sandbox(stack.sandbox.base_url, stack.state, stack.hub, stack.http))


@asynccontextmanager
async def signed_in(stack: Stack, user: str) -> AsyncIterator[Browser]:
    """A browser in which `user` signed in through the sandbox's authorize page."""
    async with browsing(site(stack)) as browser:
        landed = await browser.sign_in(user)
        assert landed.status == 302 and browser.cookie(SESSION_COOKIE), landed.html
        yield browser


def forms(page: str) -> dict[str, dict[str, str]]:
    """The page's decision forms by action: their hidden fields (and where they post)."""
    found: dict[str, dict[str, str]] = {}
    for action_url, body in FORM.findall(page):
        fields = {name: html.unescape(value) for name, value in HIDDEN.findall(body)}
        found[fields["action"]] = {**fields, "_to": html.unescape(action_url)}
    return found


def flash(page: str) -> tuple[str, str] | None:
    """(tone class, refusal reason or "") of the page's message about the last post."""
    found = FLASH.search(page)
    return None if found is None else (found[1], found[2] or "")


async def post(
    browser: Browser, to: str, fields: dict[str, str], *, origin: str | None = "", **headers: str
) -> Answer:
    """POST a decision form as a browser on the bot's page does (`origin` "" is the bot's own;
    None sends no Origin)."""
    sent: dict[str, Any] = dict(headers)
    if origin is not None:
        sent["Origin"] = origin or browser.bot.url
    data = {k: v for k, v in fields.items() if not k.startswith("_")}
    async with browser.http.post(
        browser.bot.url + to, data=data, headers=sent, allow_redirects=False
    ) as response:
        location = response.headers.get("Location", "")
        return Answer(response.status, location, await response.text(), SimpleCookie())


async def decide_on_page(
    browser: Browser, operation_id: str, action: str = "confirm", **changes: str
) -> tuple[Answer, Answer]:
    """Open the page, post its `action` form (fields changed by `changes`), follow the
    redirect: (the post's answer, the page it led to)."""
    page = await browser.get(f"/ops/{operation_id}")
    assert page.status == 200, page.html
    form = forms(page.html)[action]
    answer = await post(browser, form["_to"], {**form, **changes})
    assert answer.status == 303, answer.html
    return answer, await browser.get(answer.location)
