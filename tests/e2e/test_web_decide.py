"""Confirm and Reject on /ops/{id} (issue 15, items 3 and 4): the real bot in-process with
sign-in on, the sandbox as Lark (its authorize page, its chat and cards), over HTTP as a
browser posts the page's forms. A web decision is one claim with entry web, the card in the
sandbox says so and then the outcome; every refusal changes nothing and names its reason."""

from __future__ import annotations

import re
import secrets
from datetime import timedelta

from bot.api.signin import SESSION_COOKIE
from store import State
from tests.support.audit import evidence_of, inbox_digest
from tests.support.factories import order_request
from tests.support.proposer_routes import Receiver, conversation, replies_to, with_routes
from tests.support.signin import Browser
from tests.support.stack import CALLBACK_SECRET, Stack, StackFactory, card_says, settled
from tests.support.waiting import eventually
from tests.support.web_decide import decide_on_page, flash, forms, post, signed_in
from workers.webhook_signature import verify

PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob", "ou_mallory": "Mallory"}


async def web_stack(make_stack: StackFactory, **web: str) -> Stack:
    stack: Stack = await make_stack("ws", web=web, people=PEOPLE)
    return stack


async def unchanged(stack: Stack, operation_id: str) -> None:
    op = await stack.store.get(operation_id)
    assert op is not None and op.state is State.AWAITING_CONFIRMATION
    assert await stack.store.claim_count(operation_id) == 0


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None, page
    return found[1]


async def test_alice_confirms_on_the_web_once_and_the_card_says_so_then_the_outcome(
    make_stack: StackFactory,
) -> None:
    stack = await web_stack(make_stack)
    view, message_id = await stack.offered(order_request("web-confirm"))
    async with signed_in(stack, "ou_alice") as alice:
        page = await alice.get(f"/ops/{view['id']}")
        # the card's 12-character digest prefix next to the buttons, the full one posted
        assert f"Digest {view['confirm_digest'][:12]}" in page.html
        assert forms(page.html)["confirm"]["digest"] == view["confirm_digest"]
        answer, landed = await decide_on_page(alice, view["id"])
        assert answer.location.startswith(f"/ops/{view['id']}?lang=en&form=")
        assert flash(landed.html) == ("tone-green", "")
        assert "Confirmed" in landed.html and "the web" in landed.html
    # named by [people]: a mention while it awaits the outcome, plain text with it
    await card_says(stack, message_id, "Confirmed by ", " on the web at")
    done = await settled(stack, view["id"], "filled")
    assert done["decision"]["entry"] == "web" and done["decision"]["by"] == "ou_alice"
    await card_says(stack, message_id, "Filled")
    assert await stack.store.claim_count(view["id"]) == 1
    [click] = await stack.store.confirmations(view["id"])
    assert (click.entry, click.accepted, click.chat_id, click.message_id) == (
        "web",
        True,
        None,
        None,
    )
    # the decision's audit entry names the post as the inbox keeps it
    form_key = answer.location.rsplit("form=", 1)[1]
    evidence = await evidence_of(stack.store, view["id"], "confirmed")
    assert evidence == await inbox_digest(stack.store, "web", form_key)


async def test_bob_rejects_on_the_web_with_a_reason_cleaned_as_the_card_cleans_it(
    make_stack: StackFactory,
) -> None:
    stack = await web_stack(make_stack)
    view, message_id = await stack.offered(order_request("web-reject"))
    async with signed_in(stack, "ou_bob") as bob:
        _answer, landed = await decide_on_page(
            bob, view["id"], "reject", reason="  too\tlarge\u200b today  "
        )
        # acknowledged, not celebrated: a reject's message is neutral, never the green of a confirm
        assert flash(landed.html) == ("tone-grey", "")
    await card_says(stack, message_id, "Rejected by ", " on the web at")
    _, api_view = await stack.api("GET", f"/api/v1/operations/{view['id']}")
    assert api_view["state"] == "rejected"
    assert api_view["decision"]["reason"] == "too large today"
    assert api_view["decision"]["entry"] == "web"


async def test_a_replayed_form_post_records_one_decision(make_stack: StackFactory) -> None:
    stack = await web_stack(make_stack)
    view, _message_id = await stack.offered(order_request("web-replay"))
    async with signed_in(stack, "ou_alice") as alice:
        page = await alice.get(f"/ops/{view['id']}")
        form = forms(page.html)["confirm"]
        first = await post(alice, form["_to"], form)
        again = await post(alice, form["_to"], form)
        assert first.status == again.status == 303 and first.location == again.location
        landed = await alice.get(again.location)
        assert flash(landed.html) == ("tone-green", "")  # the first post's answer
    assert await stack.store.claim_count(view["id"]) == 1
    assert len(await stack.store.confirmations(view["id"])) == 1


async def refused_before_anything(answer_status: int, html: str) -> None:
    assert answer_status in (400, 403), html
    assert "Nothing was recorded" in html


async def test_forged_stale_and_foreign_posts_change_nothing_and_say_why(
    make_stack: StackFactory,
) -> None:
    stack = await web_stack(make_stack)
    view, _message_id = await stack.offered(order_request("web-refusals"))
    op_id = view["id"]
    async with signed_in(stack, "ou_alice") as alice:
        form = forms((await alice.get(f"/ops/{op_id}")).html)["confirm"]
        to = form["_to"]
        # without the CSRF token, or with another one
        for csrf in ("", "not-the-token"):
            answer = await post(alice, to, {**form, "csrf": csrf})
            await refused_before_anything(answer.status, answer.html)
            assert "not from this session" in answer.html
        # from another site; with no Origin, the Referer decides
        for origin in ("http://evil.example", "null"):
            answer = await post(alice, to, form, origin=origin)
            await refused_before_anything(answer.status, answer.html)
            assert "not posted from this dashboard" in answer.html
        answer = await post(alice, to, form, origin=None, Referer="http://evil.example/x")
        assert answer.status == 403
        answer = await post(alice, to, form, origin=None)
        assert answer.status == 403
        await unchanged(stack, op_id)
        # a stale digest: the database refuses, the reason is recorded and shown
        key = secrets.token_urlsafe(24)
        stale = await post(alice, to, {**form, "digest": "0" * 64, "form_key": key})
        assert stale.status == 303
        landed = await alice.get(stale.location)
        assert flash(landed.html) == ("tone-red", "digest_mismatch")
        assert "The terms changed" in landed.html
        await unchanged(stack, op_id)
        [refused] = await stack.store.confirmations(op_id)
        assert (refused.reason_code, refused.entry, refused.accepted) == (
            "digest_mismatch",
            "web",
            False,
        )
        # after sign-out the same form is refused
        signed_out = await alice.request("POST", "/ops/auth/sign-out", {"csrf": form["csrf"]})
        assert signed_out.status == 303 and alice.cookie(SESSION_COOKIE) in (None, "")
        answer = await post(alice, to, {**form, "form_key": secrets.token_urlsafe(24)})
        await refused_before_anything(answer.status, answer.html)
        assert "session has ended" in answer.html
    await unchanged(stack, op_id)

    async with signed_in(stack, "ou_mallory") as mallory:
        page = await mallory.get(f"/ops/{op_id}")
        assert page.status == 200 and forms(page.html) == {} and 'id="decide"' not in page.html
        forged = {**form, "csrf": csrf_of(page.html), "form_key": secrets.token_urlsafe(24)}
        answer = await post(mallory, to, forged)
        landed = await mallory.get(answer.location)
        assert flash(landed.html) == ("tone-red", "operator_not_allowed")
    async with signed_in(stack, "ou_eve") as eve:  # another tenant
        page = await eve.get(f"/ops/{op_id}")
        assert page.status == 403
        forged = {**form, "csrf": csrf_of(page.html), "form_key": secrets.token_urlsafe(24)}
        answer = await post(eve, to, forged)
        await refused_before_anything(answer.status, answer.html)
        assert "tenant_not_allowed" in answer.html
    await unchanged(stack, op_id)
    reasons = [c.reason_code for c in await stack.store.confirmations(op_id)]
    assert reasons == ["digest_mismatch", "operator_not_allowed"]


async def test_a_confirm_after_the_expiry_is_refused_expired(make_stack: StackFactory) -> None:
    stack = await web_stack(make_stack)
    view, _message_id = await stack.offered(order_request("web-expired", expires_in_s=120))
    async with signed_in(stack, "ou_alice") as alice:
        form = forms((await alice.get(f"/ops/{view['id']}")).html)["confirm"]
        stack.clock.offset += timedelta(seconds=121)
        answer = await post(alice, form["_to"], form)
        landed = await alice.get(answer.location)
        assert flash(landed.html) == ("tone-red", "expired")
    assert await stack.store.claim_count(view["id"]) == 0


async def test_a_high_value_confirm_needs_a_fresh_sign_in(make_stack: StackFactory) -> None:
    # the order's worst case is 600 USDC: above 500
    stack = await web_stack(make_stack, reauth_above="500", reauth_currency="USDC")
    view, message_id = await stack.offered(order_request("web-reauth"))
    op_id = view["id"]
    async with signed_in(stack, "ou_alice") as alice:
        assert "confirm" in forms((await alice.get(f"/ops/{op_id}")).html)  # fresh: offered
        stack.clock.offset += timedelta(seconds=301)
        page = await alice.get(f"/ops/{op_id}")
        assert 'id="reauth"' in page.html and "confirm" not in forms(page.html)
        # the Reject form stays; its fields with action=confirm are still refused
        reject = forms(page.html)["reject"]
        answer = await post(alice, reject["_to"], {**reject, "action": "confirm"})
        assert answer.status == 303 and "form=" not in answer.location
        await unchanged(stack, op_id)
        assert await stack.store.confirmations(op_id) == []
        # "sign in again" comes back to this page, and then Confirm is offered
        again = re.search(r'id="sign-in-again" href="([^"]+)"', page.html)
        assert again is not None
        await sign_in_again(alice, again[1].replace("&amp;", "&"), op_id)
        _answer, landed = await decide_on_page(alice, op_id)
        assert flash(landed.html) == ("tone-green", "")
    await card_says(stack, message_id, "on the web")
    assert await stack.store.claim_count(op_id) == 1


async def sign_in_again(browser: Browser, link: str, operation_id: str) -> None:
    sent = await browser.get(link)
    assert sent.status == 302, sent.html
    landed = await browser.get(await browser.approve(sent.location, "ou_alice"))
    assert landed.status == 302 and landed.location == f"/ops/{operation_id}"


async def test_a_web_decision_returns_to_the_proposer_as_a_card_clicks_does(
    make_stack: StackFactory, receiver: Receiver
) -> None:
    """The result return is the same: the signed webhook (who confirmed, the outcome) and
    the reply in the proposer's thread."""
    stack = await web_stack(make_stack)
    thread = await conversation(stack)
    body = with_routes(order_request("web-routed"), conversation_id=thread, url=receiver.url)
    view, _message_id = await stack.offered(body)
    async with signed_in(stack, "ou_alice") as alice:
        _answer, landed = await decide_on_page(alice, view["id"])
        assert flash(landed.html) == ("tone-green", "")
    await eventually(lambda: bool(receiver.accepted), deadline_s=60)
    (hook,) = receiver.accepted
    assert verify(CALLBACK_SECRET, hook.headers, hook.body)
    assert hook.json["operation_id"] == view["id"] and hook.json["outcome"] == "filled"
    assert hook.json["confirmed_by"] == "ou_alice"
    await eventually(lambda: bool(replies_to(stack, thread)), deadline_s=60, woken_by=stack.state)
    (text,) = replies_to(stack, thread)
    assert "Filled" in text and "Alice" in text
