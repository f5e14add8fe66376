"""The approval policy on the card: what it needs and why, the notional, who has confirmed
while it waits, every confirmer once claimed, and Lark's dialog before a Confirm is sent."""

from __future__ import annotations

from typing import Any

import pytest

from cards.render import render_card
from store import Approval, Audience, Store, operation_view
from tests.support.cards import (
    T0,
    FixedClock,
    confirmed,
    counted,
    fields,
    finance_op,
    markdown_texts,
    plain_texts,
    tagged,
)

TRIO = Audience("ops", "oc_ops", ("ou_alice", "ou_bob", "ou_carol"))
LARGE = Approval(required=2, rule="large", threshold="50,000 USDC", notional="62000.00 USDC")


@pytest.fixture
def clock(store: Store) -> FixedClock:
    fixed = FixedClock(T0)
    store.clock = fixed
    return fixed


def card_of(view: dict[str, Any], lang: str = "en") -> dict[str, Any]:
    return render_card(view, lang=lang, now=T0)  # type: ignore[arg-type]


def buttons(card: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {button["element_id"]: button for button in tagged(card, "button")}


async def test_a_card_needing_one_confirmation_from_anyone_looks_as_it_did(
    store: Store, clock: FixedClock
) -> None:
    card = card_of(operation_view(await finance_op(store)))
    assert not [text for text in plain_texts(card) if text.startswith(("Needs", "Only"))]
    assert "confirm" not in buttons(card)["confirm"]


async def test_two_of_three_says_what_it_needs_and_asks_a_second_look(
    store: Store, clock: FixedClock
) -> None:
    op = await finance_op(store, audience=TRIO, approval=LARGE)
    card = card_of(operation_view(op))
    texts = plain_texts(card)
    # the rule's amount and the notional read alike: grouped, to USDC's cents (the approval
    # bound into the digest keeps its own words)
    assert "Needs 2 of 3 operators — above 50,000.00 USDC" in texts
    assert fields(card)["Notional (worst case)"] == "62,000.00 USDC"
    assert operation_view(op).approval.notional == "62000.00 USDC"
    dialog = buttons(card)["confirm"]["confirm"]
    assert dialog["title"]["content"] == "Confirm this operation?"
    assert dialog["text"]["content"].startswith("BUY 0.010 BTC-PERP · notional 62,000.00 USDC")
    assert "needs 2 of 3 operators" in dialog["text"]["content"]
    assert "confirm" not in buttons(card)["reject"]  # a veto needs no second look

    zh = card_of(operation_view(op), "zh")
    assert "需要 3 名操作员中的 2 名确认 — 超过 50,000.00 USDC" in plain_texts(zh)


async def test_part_way_it_names_who_confirmed_and_how_many_are_left(
    store: Store, clock: FixedClock
) -> None:
    op = await counted(store, clock, await finance_op(store, audience=TRIO, approval=LARGE))
    card = card_of(operation_view(op))
    assert "1 of 2 confirmed: <at id=ou_alice></at> · waiting for 1 more" in markdown_texts(card)
    assert set(buttons(card)) == {"confirm", "reject", "reject_no_reason"}  # still open


async def test_once_claimed_it_names_every_confirmer(store: Store, clock: FixedClock) -> None:
    op = await confirmed(store, clock, await finance_op(store, audience=TRIO, approval=LARGE))
    card = card_of(operation_view(op))
    status = [text for text in markdown_texts(card) if text.startswith("Confirmed by")]
    assert status and status[0].startswith(
        "Confirmed by <at id=ou_alice></at>, <at id=ou_bob></at> at"
    )
    assert not [text for text in markdown_texts(card) if "waiting for" in text]
    assert not buttons(card)


async def test_a_narrowed_rule_and_an_unknown_notional_say_so(
    store: Store, clock: FixedClock
) -> None:
    only_bob = Approval(
        approvers=("ou_bob",), rule="huge", threshold="250,000 USDC", notional="300000.00 USDC"
    )
    card = card_of(operation_view(await finance_op(store, audience=TRIO, approval=only_bob)))
    assert "Only ou_bob may confirm — above 250,000.00 USDC" in plain_texts(card)
    assert "confirm" in buttons(card)["confirm"]  # a rule applied: a second look

    unknown = Approval(required=2, rule="large", threshold="50,000 USDC", notional="unknown USDC")
    card = card_of(operation_view(await finance_op(store, audience=TRIO, approval=unknown)))
    assert (
        "Needs 2 of 3 operators — notional unknown, counted as above 50,000.00 USDC"
        in plain_texts(card)
    )
