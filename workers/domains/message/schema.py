"""message.send's terms: its payload (schema version 1), the kind, and what its receipts
say of a draft.

The `Domain` that plugs the kind in (settings, runner, checks, words) is `domain.py`; the
runner and the domain import this module, and it imports neither.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints, ValidationInfo
from pydantic_core import PydanticCustomError

from cards.plain_text import NAME_MAX_CHARS, people_text
from workers.domains.message.text import draft_text_problem, outbound_text
from workers.domains.types import Name, OpenId, StrictModel, TextProblem, normalise_newlines

KIND = "message.send"
EXECUTOR_NAME = "lark-message"
EXECUTOR_REVISION = "1"

MessageId = Annotated[str, StringConstraints(pattern=r"^om_[A-Za-z0-9_-]{1,120}$")]
# Hard ceiling for the schema; the configured cap (max_text_chars) is checked in admit().
TEXT_CEILING = 30000
MAX_MENTIONS = 20
# A payload read back from the store (validated with STORED) was admitted under the rules of
# its day and must load; the runner re-checks what it sends (MessageRunner.prepare).


def _refused(code: str, problem: TextProblem) -> PydanticCustomError:
    # the fix rides in the context, so the 422 carries it (bot/config/validation.py)
    return PydanticCustomError(code, "{reason}", {"reason": problem.reason, "fix": problem.fix})


def _draft_text(value: str, info: ValidationInfo) -> str:
    """Refuse what cannot be shown faithfully (positions as sent), then LF line breaks."""
    if not (info.context or {}).get("stored"):
        problem = draft_text_problem(value, TEXT_CEILING)
        if problem is not None:
            raise _refused("message_text", problem)
    return normalise_newlines(value)


def _mention_list(open_ids: list[str]) -> list[str]:
    if len(open_ids) > MAX_MENTIONS:
        raise _refused(
            "mentions",
            TextProblem(
                f"lists {len(open_ids)} people; at most {MAX_MENTIONS} may be mentioned",
                "mention fewer people, or address the chat in the text",
            ),
        )
    repeated = sorted(open_id for open_id, count in Counter(open_ids).items() if count > 1)
    if repeated:
        raise _refused(
            "mentions",
            TextProblem(f"lists {', '.join(repeated)} more than once", "list each person once"),
        )
    return open_ids


class MessageSendV1(StrictModel):
    destination: Name
    counterparty: Name
    text: Annotated[str, AfterValidator(_draft_text)]
    priority: Literal["P0", "P1", "P2", "P3"]
    reply_to: MessageId | None = None
    # people to @mention, as data: shown on the card, bound into the digest, written by the bot
    mentions: Annotated[list[OpenId], AfterValidator(_mention_list)] | None = None
    # a signed or delivered contract on record refuses the draft unless this is set; the card
    # then carries the override stamp (workers/domains/message/baseline.py)
    force_despite_signed_contract: bool | None = None
    # sent by itself this long after filing if nobody has decided (only where the destination
    # allows it, up to its auto_send_max_s); without it a draft waits for a person
    auto_send_after_s: Annotated[int, Field(ge=10, le=86_400)] | None = None
    # the inbound message this draft answers (recorded from the destination's chat)
    signal_id: MessageId | None = None

    def outbound(self) -> str:
        """The text Lark receives for this draft."""
        return outbound_text(self.text, self.mentions or ())


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# how much of a text's SHA-256 the internal receipts name (the card shows all of it)
SHA_PREFIX = 8


def filing_receipt_text(message: MessageSendV1) -> str:
    """The ops chat's one line when a draft is filed; never shown to the counterparty.
    The counterparty's name is text, never markup (cards/plain_text.py)."""
    return (
        f"Draft to {people_text(message.counterparty, NAME_MAX_CHARS)} filed for approval "
        f"({message.priority}, "
        f"sha {text_sha256(message.text)[:SHA_PREFIX]}). Waiting on operator."
    )


def destination_ref(name: str) -> str:
    """A draft's target_ref: its destination."""
    return f"destination:{name}"
