"""A click's ack: the one budget, every deadline inside Lark's 3 s derived from it, and the
answer a click gets in time.

Lark drops an answer that has not reached it 3 s after the click. One setting,
`lark.answer_budget_s` (`AckTerms.answer_budget_s`, 2 s), is how long a click waits for its
definitive answer; the deadlines after it are derived here and nowhere else:

- `record_deadline_s` (2.5 s): a click whose decision missed the budget is answered
  "processing" once it is on record (or its write is in a batch being committed) until
  then; after it, "busy", and its write is withdrawn, so "busy" never comes with an effect.
- `transport_deadline_s` (2.7 s): the transports' safety net (bot/lark/ingress_port.py
  `bounded_answer`): a consumer that has not answered by then (stuck, or its loop is) is
  answered for by the transport, with the same "processing" toast (`AckTerms.processing`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

from cards.strings import Lang, i18n, text
from store import ClickWrites, Pending

# Lark's contract: an answer reaching it later than this after the click is dropped.
LARK_ACK_S = 3.0
# Left to the ack for its way back to Lark (a ws frame, an HTTP response).
ACK_TRAVEL_S = 0.3
# After the budget, a click may still come on record for this long (then "processing").
RECORD_GRACE_S = 0.5
# The consumer's last answer ("processing" or "busy") leaves this long before the transports'
# safety net fires, so a consumer that is not stuck always answers for itself.
NET_MARGIN_S = 0.2
# The default of the one setting, `lark.answer_budget_s`.
ANSWER_BUDGET_S = 2.0

PROCESSING = "toast.processing"  # the one "processing" toast (cards/strings.py), en and zh
BUSY = "toast.busy"


def toast(kind: str, key: str, lang: Lang) -> dict[str, Any]:
    """An answer holding one toast: in `lang`, and in every language for Lark's clients."""
    return {"toast": {"type": kind, "content": text(key, lang), "i18n": i18n(key)}}


@dataclass(frozen=True)
class AckTerms:
    """The one ack budget and what follows from it: the deadlines, and the toasts that
    answer a click before its decision (in the cards' language)."""

    answer_budget_s: float = ANSWER_BUDGET_S
    lang: Lang = "en"

    def __post_init__(self) -> None:
        if not 0 < self.answer_budget_s <= self.record_deadline_s:
            raise ValueError(f"answer budget {self.answer_budget_s} s leaves no time to ack")

    @property
    def transport_deadline_s(self) -> float:
        # The one place the 3 s are shared out. The net fires after the consumer's last answer
        # (budget, grace, margin) and never later than Lark's 3 s less the ack's way back: a
        # budget over 2 s shortens the grace, never the margin to Lark; a smaller one moves
        # every deadline earlier with it.
        latest = LARK_ACK_S - ACK_TRAVEL_S
        return min(self.answer_budget_s + RECORD_GRACE_S + NET_MARGIN_S, latest)

    @property
    def record_deadline_s(self) -> float:
        return self.transport_deadline_s - NET_MARGIN_S

    def processing(self) -> dict[str, Any]:
        """The click is (or is being) committed; the card follows by patch. The consumer's
        answer past the budget, and the transports' when the consumer has not answered."""
        return toast("info", PROCESSING, self.lang)

    def busy(self, kind: str = "warning") -> dict[str, Any]:
        """Not taken (or failed before it was): click again."""
        return toast(kind, BUSY, self.lang)


@dataclass(eq=False)
class Flight:
    """One click between its arrival and its answer."""

    answer: asyncio.Future[dict[str, Any]]
    on_record: asyncio.Event = field(default_factory=asyncio.Event)
    # answered "busy" before it was on record: the operator will click again, so this one
    # must have no effect
    abandoned: bool = False
    write: Pending | None = None  # its first write, once queued (withdrawn on "busy")

    def give(self, result: dict[str, Any]) -> None:
        if not self.answer.done():
            self.answer.set_result(result)


async def answer_in_time(
    flight: Flight, started: float, terms: AckTerms, clicks: ClickWrites
) -> tuple[dict[str, Any], str]:
    """The definitive answer within the budget; else "processing", which promises the click
    is on record (or in a batch being committed), so it waits for that up to the record
    deadline; else "busy", and then the click's write is taken back. Returns the answer and
    its outcome ("answered", "processing", "busy")."""
    with contextlib.suppress(TimeoutError):
        budget = terms.answer_budget_s
        return await asyncio.wait_for(asyncio.shield(flight.answer), budget), "answered"
    if not flight.on_record.is_set():
        left = terms.record_deadline_s - (time.perf_counter() - started)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(flight.on_record.wait(), max(0.0, left))
    if flight.answer.done():
        return flight.answer.result(), "answered"
    # Too late for the definitive answer: mark it so the decision, when it commits,
    # leaves the card to the card worker instead of counting it as shown.
    flight.answer.cancel()
    if flight.on_record.is_set():
        return terms.processing(), "processing"
    # No await from here to the end: the click's task cannot move in between.
    if flight.write is not None and not clicks.withdraw(flight.write):
        # a batch holds its write already: it commits (or fails) within moments, and
        # the card worker shows the result; telling the operator to click again would
        # make them do it twice
        return terms.processing(), "processing"
    flight.abandoned = True  # never written, and now never will be: "click again"
    return terms.busy(), "busy"
