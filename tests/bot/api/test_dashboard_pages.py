"""The dashboard's pages over the real app and store, without Lark: "Needs attention" with its
counts, the list's filters and search, the detail page's header, the HTML 404s and `/`."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape
from typing import Any

from aiohttp.test_utils import TestClient
from sqlalchemy import insert

from bot.api.dashboard_html import Chrome, detail_html, list_html
from cards.vocabulary import headline
from kernel.timeutil import parse_iso_utc
from store import (
    Approval,
    Audience,
    CardLedger,
    Claimed,
    Click,
    Counted,
    Decided,
    DeliveryRow,
    DeliveryState,
    Execution,
    ExecutionLedger,
    Observation,
    Operation,
    Stage,
    Store,
    operation_view,
)
from tests.support.api import ClientFactory, auth, make_config
from tests.support.dashboard import counts, rows, text_of
from tests.support.factories import dispatching, draft, message_draft_fields, offered
from tests.support.projection import edited
from workers.execution_failures import meant

Client = TestClient[Any, Any]
PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob"}
RECORDS: dict[str, Any] = {"confirmations": [], "attempt": None, "card": [], "deliveries": []}


async def page(api: Client, path: str, status: int = 200) -> str:
    response = await api.get(path)
    assert response.status == status, (path, response.status)
    assert response.content_type == "text/html"
    return await response.text()


async def executed(store: Store, status: str, execution: Execution) -> Operation:
    op = await offered(store)
    claimed = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(claimed, Claimed)
    await dispatching(store, op.id)
    seen = Observation(Stage.INITIAL, status, execution, answers_attempt=True)
    await ExecutionLedger(store).record_observation(op.id, meant(op.kind, seen))  # as executed
    return op


async def test_needs_attention_counts_each_group_then_shows_recent_activity(
    client_for: ClientFactory, store: Store
) -> None:
    api = await client_for(make_config(people=PEOPLE))
    calm = await page(api, "/ops")
    assert counts(calm) == dict.fromkeys(
        ["awaiting", "unknown", "unresolved", "card_failed", "delivery_failed"], 0
    )
    assert "Nothing needs attention." in calm

    waiting = await offered(store, expires_in_s=900)
    unposted = await offered(store, expires_in_s=1800)
    await CardLedger(store).failed(unposted.id, 1, "send", 500, "lark down", retry_in_s=None)
    unknown = await executed(store, "unknown", Execution.SUBMISSION_UNKNOWN)
    undelivered = await executed(store, "filled", Execution.COMPLETED)
    row = {
        "id": "D" + undelivered.id[1:],
        "operation_id": undelivered.id,
        "channel": "webhook",
        "stage": "initial",
        "outcome_digest": "0" * 64,
        "state": DeliveryState.FAILED.value,
        "created_at": store.clock(),
    }
    await store.transact(lambda conn: conn.execute(insert(DeliveryRow).values(**row)))

    html = await page(api, "/ops")
    assert counts(html) == {
        "awaiting": 2,
        "unknown": 1,
        "unresolved": 0,
        "card_failed": 1,
        "delivery_failed": 1,
    }
    assert "Nothing needs attention." not in html
    assert rows(html, "awaiting") == [waiting.id, unposted.id]  # the sooner expiry first
    assert rows(html, "unknown") == [unknown.id]
    assert rows(html, "card_failed") == [unposted.id]
    assert rows(html, "delivery_failed") == [undelivered.id]
    assert 'id="unresolved"' not in html  # an empty group is only its count
    assert set(rows(html, "recent")) == {waiting.id, unposted.id, unknown.id, undelivered.id}
    # the expiry in the display zone, named; the page reloads each minute while something
    # waits (data-ticking), so it may say how long is left too
    assert re.search(
        r'<time datetime="[^"]+" title="(\d{4}-\d\d-\d\d \d\d:\d\d UTC)">\1</time> '
        r'<span class="rel">\(in 1[45] min\)<',
        html,
    )
    assert 'data-ticking="1"' in html and 'data-ticking="0"' in calm
    # in the recent list, why an operation needs a person is said beside its state
    assert '<span class="note">Submission unknown</span>' in html
    assert "Order to confirm" in html and "Submission unknown — reconciling" in html

    zh = await page(api, "/ops?lang=zh")
    assert "需要处理" in zh and "待确认" in zh and "提交结果未知" in zh and "分钟后" in zh
    zh_by_header = await api.get("/ops", headers={"Accept-Language": "zh-CN,zh;q=0.9"})
    assert "需要处理" in await zh_by_header.text()


async def test_the_list_filters_by_state_outcome_and_search(
    client_for: ClientFactory, store: Store
) -> None:
    api = await client_for(make_config(people=PEOPLE))
    filled = await executed(store, "filled", Execution.COMPLETED)
    waiting = await offered(store)
    message = (await store.propose(draft(**message_draft_fields("Friday it is")))).operation

    async def listed(query: str) -> list[str]:
        return re.findall(r'<tr data-op="(\w+)">', await page(api, f"/ops/all?{query}"))

    assert await listed("") == [message.id, waiting.id, filled.id]
    assert await listed("state=awaiting_confirmation") == [waiting.id]
    assert await listed("outcome=filled") == [filled.id]
    assert await listed("outcome=sent") == []
    assert await listed("q=acme-supplier") == [message.id]
    assert await listed(f"q={filled.id[-10:].lower()}") == [filled.id]
    assert await listed("q=BTC-PERP&outcome=filled") == [filled.id]
    assert await listed("state=nonsense&outcome=nonsense") == [message.id, waiting.id, filled.id]
    html = await page(api, "/ops/all?outcome=filled")
    assert '<option value="filled" selected>Filled</option>' in html
    assert '<option value="awaiting_confirmation">awaiting confirmation</option>' in html
    # the list's old address on /ops keeps working
    moved = await api.get("/ops?state=awaiting_confirmation", allow_redirects=False)
    assert moved.status == 302 and moved.headers["Location"].startswith("/ops/all?state=")
    # searches no store can be asked: an HTML 400 naming the field
    assert "q" in await page(api, "/ops/all?q=" + "x" * 65, status=400)
    assert "control characters" in await page(api, "/ops/all?q=a%00b", status=400)


def searched_to(html: str) -> str:
    """The sentence a windowed search page ends with, its tags dropped."""
    found = re.search(r'<p id="searched-to">(.*?)</p>', html, re.S)
    assert found is not None
    return unescape(re.sub(r"<[^>]+>", "", found[1]))


def test_a_search_that_stopped_at_its_window_says_how_far_back_it_looked() -> None:
    now = parse_iso_utc("2026-12-06T12:00:00Z")
    back_to = now - timedelta(days=3)
    filters = {"q": "acme"}
    html = list_html(
        [], filters, "CURSOR", Chrome("en", "mark", "/ops/all", filters), {}, now, back_to
    )
    said = searched_to(html)
    assert said.startswith("Looked through the operations created back to 2026-12-03 12:00 UTC")
    # the list never reloads by the clock: no "3d 0h ago" that would go stale on it
    assert "ago" not in said and said.endswith("older ones on the next page.")
    assert 'href="/ops/all?lang=en&amp;cursor=CURSOR&amp;q=acme" rel="next"' in html
    zh = list_html(
        [], filters, "CURSOR", Chrome("zh", "mark", "/ops/all", filters), {}, now, back_to
    )
    assert searched_to(zh).startswith("已查找的操作最早创建于 2026-12-03 12:00 UTC")
    # a page that reached the oldest operation says nothing of the kind
    assert 'id="searched-to"' not in list_html([], filters, None, Chrome("en", "m"), {}, now)


async def test_the_root_redirects_and_missing_pages_are_html_404s_but_the_api_stays_json(
    api: Client,
) -> None:
    home = await api.get("/?lang=zh", allow_redirects=False)
    assert home.status == 302 and home.headers["Location"] == "/ops?lang=zh"
    missing = await page(api, "/ops/01NOSUCHOPERATION000000000", status=404)
    assert "There is no operation 01NOSUCHOPERATION000000000." in missing
    assert 'href="/ops?lang=en"' in missing  # a way back
    assert "此页面不存在" in await page(api, "/ops/a/b?lang=zh", status=404)
    response = await api.get("/api/v1/operations/01NOSUCHOPERATION000000000", headers=auth())
    assert response.status == 404 and response.content_type == "application/json"


async def test_the_header_says_the_state_in_words_and_the_decision_by_name(store: Store) -> None:
    op = await offered(store, expires_in_s=600)
    open_view = edited(operation_view(op), source={"reason": "Rebalance <desk> before the auction"})
    ten_before = parse_iso_utc(open_view.expires_at) - timedelta(minutes=10)
    html = detail_html(open_view, RECORDS, "en", "-", people=PEOPLE, now=ten_before)
    assert text_of(html, "headline") == headline(open_view, PEOPLE).words("en")
    assert text_of(html, "headline") == "Order to confirm"
    assert 'Why: <span class="long">Rebalance &lt;desk&gt; before the auction</span>' in html
    # absolute, named; the open operation's page reloads each minute, so "in 10 min" too
    assert re.search(
        r"Expires at <time [^>]+>\d{4}-\d\d-\d\d \d\d:\d\d UTC</time> "
        r'<span class="rel">\(in 10 min\)</span>',
        html,
    )
    assert "Proposed by dev-agent" in html

    vetoed = await store.reject(
        Click(op.id, "reject", op.confirm_digest, "ou_bob", "oc_ops", None, reason="Too big")
    )
    assert isinstance(vetoed, Decided)
    view = operation_view(vetoed.operation)
    html = detail_html(view, RECORDS, "en", "-", people=PEOPLE)
    assert text_of(html, "headline") == "Rejected by Bob: Too big"
    assert "Rejected by Bob at <time" in html and text_of(html, "decision-reason") == "Too big"
    assert "Expires" not in html  # hidden once decided
    zh = detail_html(view, RECORDS, "zh", "-", people=PEOPLE)
    assert text_of(zh, "headline") == "已被 Bob 拒绝：Too big"
    # tables have column headers; values read as the card says them; typed text is escaped
    view.terms["terms"] = [{"name": "reduce_only", "value": False}]
    html = detail_html(view, RECORDS, "en", "-")
    assert "<th>Term</th><th>Value</th>" in html
    assert '<span>Reduce only</span></td><td data-label="Value"><span class="long">no<' in html
    view.terms["title"] = "<script>alert(1)</script>"
    assert "<script>alert" not in detail_html(view, RECORDS, "en", "-")


async def test_the_header_says_what_the_approval_policy_asks_and_who_confirmed(
    store: Store,
) -> None:
    trio = Audience("ops", "oc_ops", ("ou_alice", "ou_bob", "ou_carol"))
    large = Approval(required=2, rule="large", threshold="50,000 USDC", notional="60000.00 USDC")
    op = await offered(store, audience=trio, approval=large)
    counted = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(counted, Counted)
    html = detail_html(operation_view(counted.operation), RECORDS, "en", "-", people=PEOPLE)
    assert text_of(html, "headline") == "Order to confirm — 1 of 2 confirmed"
    lines = re.search(r'<ul class="lines".*?</ul>', html, re.S)
    assert lines is not None
    assert "<li>Needs 2 of 3 operators — above 50,000.00 USDC</li>" in lines[0]
    assert "<li>1 of 2 confirmed: Alice · waiting for 1 more</li>" in lines[0]
    assert "ou_alice" not in html  # people by name
    assert "<span>Notional (worst case)</span>" in html and "60,000.00 USDC" in html
