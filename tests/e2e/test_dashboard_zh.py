"""Every dashboard page in zh through a real stack (sandbox Lark, bot, store): /ops, the list
and its filters, an operation in several states, the policy, the delegations, and the error
pages, their text read from the HTML; no English word left but the operations' own names,
ids and free text, the config's names, and the product's (tests/support/zh_sweep.py)."""

from __future__ import annotations

from store import OperationView
from tests.support.factories import message_request, order_request
from tests.support.stack import Stack, StackFactory, settled
from tests.support.zh_sweep import config_words, english_left, html_texts, operation_words

PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob", "ou_carol": "Carol"}


async def fetched(stack: Stack, path: str, status: int = 200) -> str:
    async with stack.http.get(f"{stack.bot_url}{path}") as response:
        assert response.status == status, (path, response.status)
        assert response.content_type == "text/html", path
        return await response.text()


def english_on(html: str, allowed: set[str]) -> dict[str, list[str]]:
    left = {text: english_left(text, allowed) for text in html_texts(html)}
    return {text: words for text, words in left.items() if words}


async def test_every_dashboard_page_reads_in_chinese(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack("ws", people=PEOPLE)
    filled, filled_card = await stack.offered(order_request("zh-filled"))
    await stack.click(filled_card, "ou_alice")
    await settled(stack, filled["id"], "filled")
    rejected, rejected_card = await stack.offered(order_request("zh-rejected"))
    await stack.click(rejected_card, "ou_bob", "reject", reason="太大了")
    waiting, _ = await stack.offered(order_request("zh-waiting"))
    message, _ = await stack.offered(message_request("zh-message"))

    views = []
    for each in (filled, rejected, waiting, message):
        _, fresh = await stack.api("GET", f"/api/v1/operations/{each['id']}")
        views.append(OperationView.model_validate(fresh))
    settings = stack.config().settings.model_dump(mode="json")
    allowed = set().union(*(operation_words(v) for v in views)) | config_words(PEOPLE, settings)
    pages = {
        "needs attention": await fetched(stack, "/ops?lang=zh"),
        "all": await fetched(stack, "/ops/all?lang=zh"),
        "filtered": await fetched(stack, "/ops/all?lang=zh&state=rejected&q=btc"),
        "policy": await fetched(stack, "/ops/policy?lang=zh"),
        "delegations": await fetched(stack, "/ops/delegations?lang=zh"),
        "not found": await fetched(stack, "/ops/01ZZZZZZZZZZZZZZZZZZZZZZZZ?lang=zh", 404),
        "no such page": await fetched(stack, "/ops/no/such/page?lang=zh", 404),
        "search refused": await fetched(stack, "/ops/all?lang=zh&q=" + "x" * 500, 400),
        **{
            f"operation {view.id}": await fetched(stack, f"/ops/{view.id}?lang=zh")
            for view in views
        },
    }
    left = {name: english_on(html, allowed) for name, html in pages.items()}
    assert {name: found for name, found in left.items() if found} == {}
