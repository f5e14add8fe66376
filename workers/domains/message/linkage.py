"""What a draft is checked against when it is filed, read by the API first (I/O at the
edge): its destination's baseline (baseline.py) and the inbound signal it answers.

A draft may name the message it answers (`payload.signal_id`): a text the counterparty wrote
in the destination's chat, which the text listener recorded as an inbound signal
(store/inbox/signals.py). An id no signal of that destination has is refused (422
`unknown_signal`); a known one is shown on the card ("Answers ...") and kept in the
projection (`signal`: its id, sender and time), so the digest binds the link and the
dashboard can show inbound -> draft -> sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernel.problems import FieldProblem
from kernel.timeutil import iso_utc
from workers.domains.message.baseline import BaselineReading

if TYPE_CHECKING:  # annotations only: the registry loads no SQLAlchemy (countersign mcp)
    from store import Signal

SIGNAL_TERM = "answers"
UNKNOWN_SIGNAL = "unknown_signal"
PREVIEW_CHARS = 120


@dataclass(frozen=True)
class Readings:
    baseline: BaselineReading | None = None  # None: the destination has no baseline source
    signal: Signal | None = None  # the signal payload.signal_id names, if one is recorded


def signal_problem(signal_id: str, found: Signal | None, destination: str) -> FieldProblem | None:
    if found is not None and found.message_id == signal_id and found.destination == destination:
        return None
    return FieldProblem(
        "payload.signal_id",
        f"no inbound message {signal_id} is recorded in destination {destination!r}'s chat",
        "name a message the counterparty wrote in that chat (the id Lark gave it), or leave "
        "signal_id out",
    )


def signal_additions(signal: Signal) -> dict[str, Any]:
    """The card's "Answers" term and the projection's `signal` for a linked draft."""
    words = " ".join(signal.text.split())
    preview = words if len(words) <= PREVIEW_CHARS else words[: PREVIEW_CHARS - 1] + "…"
    at = iso_utc(signal.received_at)
    return {
        "terms": [
            {
                "name": SIGNAL_TERM,
                "value": f"{signal.message_id} from {signal.sender_open_id} at {at}: {preview}",
            }
        ],
        "signal": {"id": signal.message_id, "sender": signal.sender_open_id, "received_at": at},
    }
