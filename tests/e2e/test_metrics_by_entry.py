"""`/metrics` counts decisions, claims and refusals by the entry they came through (issue 33):
a confirmation on the web page moves the web's series and not the card's, a card click the
reverse; the first confirmation of two moves the decisions but not the claims; a web post
the database refused moves the web's refusals by its reason. The real bot in-process with
sign-in on, the sandbox as Lark, both backends."""

from __future__ import annotations

from kernel.reasons import Reason
from tests.support.factories import LARGE_ORDERS_RULE, TRIO_AUDIENCE, big_order, order_request
from tests.support.metrics import samples
from tests.support.stack import Stack, StackFactory
from tests.support.web_decide import decide_on_page, flash, forms, post, signed_in

PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob", "ou_carol": "Carol"}
DECISIONS = "countersign_decisions_total"
CLAIMS = "countersign_claims_total"
REFUSALS = "countersign_refusals_total"
DECIDED = (DECISIONS + "{", CLAIMS + "{", REFUSALS + "{")


def series(name: str, **labels: str) -> str:
    """A sample's key as tests/support/metrics.py `samples` names it."""
    return name + "{" + ",".join(f'{key}="{labels[key]}"' for key in sorted(labels)) + "}"


async def moved_since(stack: Stack, before: dict[str, float]) -> dict[str, float]:
    """How far each decision, claim and refusal series moved since `before` (unmoved ones
    are absent)."""
    after = await samples(stack.http, stack.bot_url)
    keys = {key for key in set(before) | set(after) if key.startswith(DECIDED)}
    return {key: by for key in keys if (by := after.get(key, 0.0) - before.get(key, 0.0))}


async def test_a_web_confirmation_counts_for_the_web_and_a_card_one_for_lark(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack("ws", web={}, people=PEOPLE)
    on_web, _card = await stack.offered(order_request("metrics-web"))
    before = await samples(stack.http, stack.bot_url)
    async with signed_in(stack, "ou_alice") as alice:
        _answer, landed = await decide_on_page(alice, on_web["id"])
        assert flash(landed.html) == ("tone-green", "")
    moved = await moved_since(stack, before)
    assert moved[series(DECISIONS, entry="web", action="confirm")] == 1
    assert moved[series(CLAIMS, entry="web")] == 1
    assert series(DECISIONS, entry="lark", action="confirm") not in moved
    assert series(CLAIMS, entry="lark") not in moved

    on_card, message_id = await stack.offered(order_request("metrics-card"))
    before = await samples(stack.http, stack.bot_url)
    assert (await stack.click(message_id, "ou_alice"))["toast"]["type"] == "success"
    moved = await moved_since(stack, before)
    assert moved[series(DECISIONS, entry="lark", action="confirm")] == 1
    assert moved[series(CLAIMS, entry="lark")] == 1
    assert series(DECISIONS, entry="web", action="confirm") not in moved
    assert series(CLAIMS, entry="web") not in moved
    assert await stack.store.claim_count(on_card["id"]) == 1


async def test_the_first_confirmation_of_two_is_a_decision_but_no_claim(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack(
        "ws",
        web={},
        people=PEOPLE,
        audiences=[TRIO_AUDIENCE],
        approval_rules=[LARGE_ORDERS_RULE],
    )
    view, message_id = await stack.offered(big_order("metrics-two-of-three"))
    before = await samples(stack.http, stack.bot_url)
    async with signed_in(stack, "ou_alice") as alice:
        _answer, landed = await decide_on_page(alice, view["id"])
        assert flash(landed.html) == ("tone-green", "")  # counted: 1 of 2
    first = await stack.click(message_id, "ou_bob")  # the card's first, the second of two
    assert first["toast"]["type"] == "success", first
    moved = await moved_since(stack, before)
    assert moved[series(DECISIONS, entry="web", action="confirm")] == 1
    assert series(CLAIMS, entry="web") not in moved  # it only counted
    assert moved[series(DECISIONS, entry="lark", action="confirm")] == 1
    assert moved[series(CLAIMS, entry="lark")] == 1  # it completed the quorum
    assert await stack.store.claim_count(view["id"]) == 1


async def test_a_web_post_the_database_refused_counts_as_a_web_refusal_by_its_reason(
    make_stack: StackFactory,
) -> None:
    stack = await make_stack("ws", web={}, people=PEOPLE)
    view, message_id = await stack.offered(order_request("metrics-refused"))
    async with signed_in(stack, "ou_bob") as bob:
        form = forms((await bob.get(f"/ops/{view['id']}")).html)["confirm"]
        # Alice confirms on the card while Bob's page still offers Confirm
        assert (await stack.click(message_id, "ou_alice"))["toast"]["type"] == "success"
        before = await samples(stack.http, stack.bot_url)
        answer = await post(bob, form["_to"], form)
        assert answer.status == 303, answer.html
        landed = await bob.get(answer.location)
        assert flash(landed.html) == ("tone-red", Reason.ALREADY_CLAIMED.value)
    moved = await moved_since(stack, before)
    assert moved == {series(REFUSALS, entry="web", reason=Reason.ALREADY_CLAIMED.value): 1}, moved
