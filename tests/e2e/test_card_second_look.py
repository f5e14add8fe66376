"""A card's Confirm asks Lark's dialog for the same operations the web asks a fresh sign-in
for: the running bot hands `[web] reauth_above` to every card it renders (sent, patched,
answered), so a single-confirmation order above that amount is never one stray tap away."""

from __future__ import annotations

import pytest

from tests.support.factories import order_request
from tests.support.stack import StackFactory


def confirm_button(card: dict[str, object]) -> dict[str, object]:
    """The card's Confirm button, wherever the layout puts it."""
    found: list[dict[str, object]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for behavior in node.get("behaviors") or []:
                if (behavior.get("value") or {}).get("action") == "confirm":
                    found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(card)
    [button] = found
    return button


@pytest.mark.parametrize(("reauth_above", "asks"), [("100", True), ("1000000", False)])
async def test_the_card_asks_a_second_look_above_the_web_re_sign_in_amount(
    make_stack: StackFactory, reauth_above: str, asks: bool
) -> None:
    # the default order (BUY 0.010 BTC-PERP @ 60000: 600 USDC) needs one confirmation, no rule
    stack = await make_stack("ws", web={"reauth_above": reauth_above, "reauth_currency": "USDC"})
    view, message_id = await stack.offered(order_request())
    assert view["approval"]["required"] == 1 and view["approval"]["rule"] is None, view
    button = confirm_button(stack.card(message_id))
    assert ("confirm" in button) is asks, button
    answer = await stack.click(message_id, "ou_alice")
    assert answer["toast"]["type"] == "success", answer
    # the sandbox shows the dialog the card asked, and the click went through once accepted
    assert (answer["dialog"] is not None) is asks, answer
    if asks:
        assert "600" in answer["dialog"]["text"], answer["dialog"]
