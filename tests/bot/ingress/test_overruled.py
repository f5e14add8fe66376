"""A click the transport answered for itself: whichever of its two halves comes second (the
transport's "I acked it" from its thread, the consumer's "its card is shown") makes the card
due again, once; a click the transport did not answer for stays shown."""

from __future__ import annotations

import asyncio
import threading

from bot.ingress.overruled import Overruled


async def test_either_order_makes_the_card_due_once_and_an_answered_click_never() -> None:
    due: list[str] = []
    second = asyncio.Event()

    def make_due(operation_id: str) -> None:
        due.append(operation_id)
        if len(due) == 2:
            second.set()

    overruled = Overruled(make_due)

    # transport first (from its own thread), then the consumer records the card as shown
    thread = threading.Thread(target=overruled.answered_for, args=("ev-1",))
    thread.start()
    thread.join()
    assert overruled.shown("ev-1", "op-1") is True
    assert due == ["op-1"]

    # the consumer first, then the transport: the card is made due on the consumer's loop
    assert overruled.shown("ev-2", "op-2") is False
    thread = threading.Thread(target=overruled.answered_for, args=("ev-2",))
    thread.start()
    thread.join()

    await asyncio.wait_for(second.wait(), 5)  # run on this loop, as the thread scheduled it
    assert due == ["op-1", "op-2"]

    # a click whose answer reached Lark: shown, and nothing more
    assert overruled.shown("ev-3", "op-3") is False
    assert due == ["op-1", "op-2"]
