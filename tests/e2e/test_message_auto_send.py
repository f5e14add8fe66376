"""Time-boxed auto-send (issue 17, item 5): a draft that asks for it, to a destination that
allows it, is sent by the clock once its time box is over if nobody decided; any confirm,
reject or re-file before that wins; the sweep racing an operator's click gives one decision.
Drafts without it wait for a person forever. Both backends."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from store import AUTO_OPERATOR, Claimed, State, auto_send_due, claim_by_clock
from tests.support.factories import message_request
from tests.support.stack import (
    ACME_DESTINATION,
    Stack,
    StackFactory,
    auto_rules,
    card_says,
    settled,
)
from tests.support.waiting import eventually

TIME_BOX_S = 60
TIMED = {**ACME_DESTINATION, "auto_send_max_s": 600}
# a second destination of the same counterparty that allows no time box
UNTIMED = {**ACME_DESTINATION, "name": "beta", "chat_id": "oc_beta"}


def timed_draft(request_id: str, after_s: int | None = TIME_BOX_S, **payload: Any) -> Any:
    body = message_request(request_id)
    if after_s is not None:
        body["payload"]["auto_send_after_s"] = after_s
    body["payload"].update(payload)
    return body


def sent_to_acme(stack: Stack) -> list[str]:
    return [
        json.loads(m.content)["text"]
        for m in stack.state.messages.values()
        if m.chat_id == "oc_acme"
    ]


def past_the_time_box(stack: Stack) -> None:
    stack.clock.offset += timedelta(seconds=TIME_BOX_S + 1)


async def test_nobody_deciding_sends_it_once_by_the_clock(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack("ws", destinations=[TIMED])
    view, card = await stack.offered(timed_draft("auto-1"))
    assert view["auto_send_at"] is not None
    await card_says(stack, card, "Sends itself at ", "unless an operator decides first")
    assert await auto_send_due(stack.store, auto_rules(stack)) == []  # its time has not come

    past_the_time_box(stack)
    api_view = await settled(stack, view["id"], "sent")
    assert (api_view["decision"]["by"], api_view["decision"]["entry"]) == (AUTO_OPERATOR, "auto")
    assert sent_to_acme(stack) == ["Hello Acme, delivery on Friday."]
    assert await stack.store.claim_count(view["id"]) == 1
    await card_says(stack, card, "Approved by the clock", "nobody decided within the time box")
    await eventually(
        lambda: any(
            "approved by auto-ttl" in m.content
            for m in stack.state.messages.values()
            if m.chat_id == "oc_ops" and m.msg_type == "text"
        ),
        woken_by=stack.state,
    )


async def test_a_confirm_a_reject_or_a_re_file_before_the_deadline_wins(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", destinations=[TIMED])
    confirmed, card = await stack.offered(timed_draft("auto-confirmed"))
    await stack.click(card, "ou_alice")
    await settled(stack, confirmed["id"], "sent")

    rejected, card = await stack.offered(timed_draft("auto-rejected"))
    await stack.click(card, "ou_bob", "reject")
    refiled, _card = await stack.offered(timed_draft("auto-refiled"))
    newer, _newer_card = await stack.offered(timed_draft("auto-newer", after_s=None, text="v2"))

    past_the_time_box(stack)
    assert (
        await auto_send_due(stack.store, auto_rules(stack)) == []
    )  # nothing left for the clock to decide
    for op_id, state, by in (
        (confirmed["id"], State.OUTCOME_OBSERVED, "ou_alice"),
        (rejected["id"], State.REJECTED, "ou_bob"),
        (refiled["id"], State.SUPERSEDED, None),
        (newer["id"], State.AWAITING_CONFIRMATION, None),  # no time box: waits for a person
    ):
        op = await stack.store.get(op_id)
        assert op is not None and (op.state, op.decided_by) == (state, by), op_id
    assert sent_to_acme(stack) == ["Hello Acme, delivery on Friday."]  # the confirmed one only


async def test_the_sweep_racing_a_click_gives_one_decision(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack("ws", destinations=[TIMED])
    winners = []
    for round_ in range(3):
        view, card = await stack.offered(timed_draft(f"auto-race-{round_}", text=f"round {round_}"))
        past_the_time_box(stack)
        op = await stack.store.get(view["id"])
        assert op is not None
        click, by_clock = await asyncio.gather(
            stack.click(card, "ou_alice"),
            claim_by_clock(stack.store, op.id, op.confirm_digest, auto_rules(stack)),
        )
        await settled(stack, view["id"], "sent")
        assert await stack.store.claim_count(view["id"]) == 1
        accepted = [c for c in await stack.store.confirmations(view["id"]) if c.accepted]
        assert len(accepted) == 1
        decided = await stack.store.get(view["id"])
        assert decided is not None
        # the click's answer and the clock's claim agree on who won
        assert (decided.decided_by == AUTO_OPERATOR) == isinstance(by_clock, Claimed)
        assert (click["toast"]["type"] == "success") == (decided.decided_by == "ou_alice")
        winners.append(decided.decided_by)
    assert sent_to_acme(stack) == [f"round {n}" for n in range(3)]


async def test_a_time_box_is_refused_where_it_is_not_allowed_or_would_not_fit(
    make_stack: StackFactory,
) -> None:
    stack: Stack = await make_stack("ws", destinations=[TIMED, UNTIMED])
    for body, why in (
        (timed_draft("auto-off", destination="beta"), "does not send drafts by themselves"),
        (timed_draft("auto-long", after_s=601), "allows at most 600 s"),
        ({**timed_draft("auto-late", after_s=120), "expires_in_s": 60}, "before the operation"),
    ):
        status, refused = await stack.post("/api/v1/operations", body)
        assert status == 422, refused
        [field] = refused["error"]["fields"]
        assert field["field"] == "payload.auto_send_after_s" and why in field["reason"]
    assert not (await stack.store.list_operations(limit=10)).items
