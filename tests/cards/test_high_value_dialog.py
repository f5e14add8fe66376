"""The card's high-value dialog (issue 30, item 5): Confirm asks Lark's confirmation dialog
when the operation needs more than one confirmation or a rule applied, when its worst-case
notional could not be computed, or when it is above the amount the renderer is given (the web's
re-sign-in line) or in another currency; Reject never asks; the sandbox's card schema takes
the card as Lark would."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from cards.decide import Threshold, asks_second_look, decide_elements
from cards.render import render_card
from larksandbox import cardcheck
from store import Approval, Audience, Store, operation_view
from tests.support.cards import T0, FixedClock, finance_op, message_op, tagged

DUO = Audience("ops", "oc_ops", ("ou_alice", "ou_bob"))
LINE: Threshold = (Decimal("50000"), "USDC")


@pytest.fixture
def clock(store: Store) -> FixedClock:
    fixed = FixedClock(T0)
    store.clock = fixed
    return fixed


def confirm_button(elements: list[dict[str, Any]]) -> dict[str, Any]:
    [button] = [b for b in tagged({"e": elements}, "button") if b["element_id"] == "confirm"]
    return button


async def view_with(store: Store, notional: str | None) -> dict[str, Any]:
    op = await finance_op(store, audience=DUO, approval=Approval(notional=notional))
    return operation_view(op)


async def test_an_unknown_worst_case_asks_a_second_look_on_the_card(
    store: Store, clock: FixedClock
) -> None:
    view = await view_with(store, "unknown USDC")
    card = render_card(view, now=T0)
    [confirm] = [b for b in tagged(card, "button") if b["element_id"] == "confirm"]
    dialog = confirm["confirm"]
    assert dialog["title"]["content"] == "Confirm this operation?"
    assert "notional unknown USDC" in dialog["text"]["content"]
    assert "needs 1 of 2 operators" in dialog["text"]["content"]
    assert [b for b in tagged(card, "button") if "confirm" in b] == [confirm]  # Reject: never
    assert cardcheck.check_card(card) is None  # Lark's 2.0 schema takes the dialog


@pytest.mark.parametrize(
    ("notional", "asks", "said"),
    [
        ("62000.00 USDC", True, "62,000.00 USDC"),  # above the line
        ("50000.00 USDC", False, ""),  # at it: not above
        ("1.50 USDC", False, ""),
        # another currency: counted as above, as the re-sign-in does
        ("10.00 BTC", True, "10 BTC"),
        ("unknown USDC", True, "unknown USDC"),
    ],
)
async def test_above_the_line_the_renderer_is_given_it_asks(
    store: Store, clock: FixedClock, notional: str, asks: bool, said: str
) -> None:
    view = await view_with(store, notional)
    assert asks_second_look(view, LINE) is asks
    confirm = confirm_button(decide_elements(view, "en", LINE))
    assert ("confirm" in confirm) is asks
    if asks:
        assert f"notional {said} ·" in confirm["confirm"]["text"]["content"]
    # without a line only the unknown worst case asks (no rule applied, one confirmation)
    assert asks_second_look(view) is (notional == "unknown USDC")


async def test_a_message_and_a_plain_order_look_as_they_did(
    store: Store, clock: FixedClock
) -> None:
    message = operation_view(await message_op(store))
    assert not asks_second_look(message, LINE)
    assert "confirm" not in confirm_button(decide_elements(message, "en", LINE))
    plain = await view_with(store, None)
    assert not asks_second_look(plain, LINE)
