"""Why an operation's card is not in Lark when this bot serves with Lark off (`run --dev`,
`[lark] mode = "off"`): no card worker runs, so its card stays unposted, and every surface
that shows the operation (the API, the CLI through it, the dashboard) says so and what to do,
instead of "posting card" for ever. Added where it is served, never stored: the same store
served with Lark on posts those cards."""

from __future__ import annotations

from collections.abc import Sequence

from cards.vocabulary import CARD_LARK_OFF
from store import OperationView


def unposted(view: OperationView, lark_mode: str) -> OperationView:
    """`view`, its card saying why it was not posted when Lark is off and it never was."""
    card = view.card
    if lark_mode != "off" or card.message_id is not None or card.error is not None:
        return view
    return view.model_copy(update={"card": card.model_copy(update={"error": CARD_LARK_OFF})})


def all_unposted(views: Sequence[OperationView], lark_mode: str) -> list[OperationView]:
    return [unposted(view, lark_mode) for view in views]
