"""The web decision page /ops/{id} in zh, signed in: the decision panel and its forms, the
confirmations so far, why this reader may not decide, the history, and the flash after a
confirm, a reject and a refusal; no English word left but the operations' own names, ids and
free text, the config's names, and the product's (tests/support/zh_sweep.py)."""

from __future__ import annotations

import secrets

from store import OperationView
from tests.support.factories import LARGE_ORDERS_RULE, TRIO_AUDIENCE, big_order, order_request
from tests.support.signin import Answer, Browser
from tests.support.stack import Stack, StackFactory
from tests.support.web_decide import flash, forms, post, signed_in
from tests.support.zh_sweep import (
    config_words,
    english_left,
    html_texts,
    operation_words,
    words_of,
)

PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob", "ou_carol": "Carol", "ou_mallory": "Mallory"}


async def page_of(browser: Browser, operation_id: str) -> Answer:
    page = await browser.get(f"/ops/{operation_id}?lang=zh")
    assert page.status == 200, page.html
    return page


async def decided(browser: Browser, operation_id: str, action: str, **changes: str) -> Answer:
    """Post the zh page's `action` form and follow where it leads (the page with its flash)."""
    form = forms((await page_of(browser, operation_id)).html)[action]
    answer = await post(browser, form["_to"], {**form, **changes})
    assert answer.status == 303 and "lang=zh" in answer.location, answer.location
    return await browser.get(answer.location)


def english_on(html: str, allowed: set[str]) -> dict[str, list[str]]:
    left = {text: english_left(text, allowed) for text in html_texts(html)}
    return {text: words for text, words in left.items() if words}


async def test_the_signed_in_decision_page_reads_in_chinese(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack(
        "ws", web={}, people=PEOPLE, audiences=[TRIO_AUDIENCE], approval_rules=[LARGE_ORDERS_RULE]
    )
    big, _ = await stack.offered(big_order("zh-web-big"))
    small, _ = await stack.offered(order_request("zh-web-small"))
    stale, _ = await stack.offered(order_request("zh-web-stale"))
    pages: dict[str, Answer] = {}
    async with signed_in(stack, "ou_alice") as alice:
        pages["waiting"] = await page_of(alice, big["id"])
        pages["counted"] = await decided(alice, big["id"], "confirm")
        pages["confirmed by you"] = await page_of(alice, big["id"])
        key = secrets.token_urlsafe(24)
        pages["stale"] = await decided(alice, stale["id"], "confirm", digest="0" * 64, form_key=key)
    async with signed_in(stack, "ou_mallory") as mallory:
        pages["not an operator"] = await page_of(mallory, small["id"])
    async with signed_in(stack, "ou_bob") as bob:
        pages["rejected"] = await decided(bob, small["id"], "reject", reason="太大了")
        pages["confirmed"] = await decided(bob, big["id"], "confirm")
        pages["history"] = await page_of(bob, small["id"])

    views = []
    for each in (big, small, stale):
        _, fresh = await stack.api("GET", f"/api/v1/operations/{each['id']}")
        views.append(OperationView.model_validate(fresh))
    settings = stack.config().settings.model_dump(mode="json")
    allowed = set().union(*(operation_words(v) for v in views)) | config_words(PEOPLE, settings)
    # a refused post's reason code, an id (the history's tooltip), as the audit records it
    for each in views:
        allowed |= words_of([c.reason_code for c in await stack.store.confirmations(each.id)])
    left = {name: english_on(page.html, allowed) for name, page in pages.items()}
    assert {name: found for name, found in left.items() if found} == {}
    # the flashes are there to be read
    assert flash(pages["counted"].html) == ("tone-green", "")
    assert flash(pages["rejected"].html) is not None
    assert flash(pages["confirmed"].html) == ("tone-green", "")
    assert flash(pages["stale"].html) == ("tone-red", "digest_mismatch")
    assert forms(pages["not an operator"].html) == {}
    # and they say what they must, in Chinese
    said = {name: " | ".join(html_texts(page.html)) for name, page in pages.items()}
    assert "已计入确认：1/2，等待其他操作员。" in said["counted"]
    assert "您已确认过此操作，只计一次" in said["confirmed by you"]
    assert "您不是此操作的授权操作员" in said["not an operator"]
    assert "Alice 于 " in said["confirmed"] and " 在网页上确认" in said["confirmed"]
    assert "卡片显示后条款已变更" in said["stale"]
    assert "原因： | 太大了" in said["history"]
