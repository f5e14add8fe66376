"""message.send payload, schema version 1."""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, StringConstraints, ValidationInfo
from pydantic_core import PydanticCustomError

from cards.plain_text import NAME_MAX_CHARS, people_text
from store.problems import FieldProblem, ProblemsFound
from workers.domains.base import Amount, Notice, terms
from workers.domains.message.baseline import BASELINE_TERM, REFUSAL_CODE, gate
from workers.domains.message.linkage import (
    UNKNOWN_SIGNAL,
    Readings,
    signal_additions,
    signal_problem,
)
from workers.domains.message.settings import Destination, MessageSettings
from workers.domains.message.text import draft_text_problem, outbound_text
from workers.domains.types import Name, OpenId, StrictModel, TextProblem, normalise_newlines

MessageId = Annotated[str, StringConstraints(pattern=r"^om_[A-Za-z0-9_-]{1,120}$")]
# Hard ceiling for the schema; the configured cap (max_text_chars) is checked in admit().
TEXT_CEILING = 30000
MAX_MENTIONS = 20
# Validation context for a payload read back from the store: it was admitted under the rules
# of its day and must load; the runner re-checks what it sends (MessageRunner.prepare).
STORED = {"stored": True}


def _refused(code: str, problem: TextProblem) -> PydanticCustomError:
    # the fix rides in the context, so the 422 carries it (bot/validation.py)
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


def _auto_send_problem(payload: MessageSendV1, destination: Destination) -> FieldProblem | None:
    if payload.auto_send_after_s is None:
        return None
    most = destination.auto_send_max_s
    if most is None:
        return FieldProblem(
            "payload.auto_send_after_s",
            f"destination {destination.name!r} does not send drafts by themselves",
            "leave auto_send_after_s out: an operator decides (or ask an administrator to "
            "set auto_send_max_s on the destination)",
        )
    if payload.auto_send_after_s > most:
        return FieldProblem(
            "payload.auto_send_after_s",
            f"is {payload.auto_send_after_s} s; destination {destination.name!r} allows at "
            f"most {most} s",
            f"ask for at most {most} s",
        )
    return None


class MessageDomain:
    kind = "message.send"
    executor_name = "lark-message"
    executor_revision = "1"
    simulated = False
    supersedes_open_drafts = True
    free_text_fields: frozenset[str] = frozenset({"text"})
    needs_capabilities = False  # destinations are configuration, checked in admit()

    def schema(self, version: int) -> type[BaseModel] | None:
        return MessageSendV1 if version == 1 else None

    def project(self, payload: BaseModel) -> dict[str, Any]:
        assert isinstance(payload, MessageSendV1)
        return {
            "title": f"Message to {payload.counterparty} ({payload.priority})",
            "terms": terms(
                {
                    "destination": payload.destination,
                    "counterparty": payload.counterparty,
                    "priority": payload.priority,
                    "reply_to": payload.reply_to,
                    "mentions": payload.mentions or None,
                    "text": payload.text,
                    "text_sha256": text_sha256(payload.text),
                }
            ),
            "simulated": self.simulated,
            # the card offers "Request changes": an operator may send the draft back
            "steer": True,
        }

    def target_ref(self, payload: BaseModel) -> str:
        assert isinstance(payload, MessageSendV1)
        return destination_ref(payload.destination)

    def admit(self, payload: BaseModel, settings: Any) -> list[FieldProblem]:
        assert isinstance(payload, MessageSendV1) and isinstance(settings, MessageSettings)
        problems = []
        if len(payload.text) > settings.max_text_chars:
            problems.append(
                FieldProblem(
                    "payload.text",
                    f"is {len(payload.text)} characters; the cap is {settings.max_text_chars}",
                    "shorten it or split it into several messages (text is never truncated)",
                )
            )
        destination = settings.destination(payload.destination)
        if destination is None:
            known = ", ".join(d.name for d in settings.destinations) or "none configured"
            problems.append(
                FieldProblem(
                    "payload.destination",
                    f"no message destination {payload.destination!r}",
                    f"use a configured destination ({known})",
                )
            )
        elif (problem := _auto_send_problem(payload, destination)) is not None:
            problems.append(problem)
        if destination is not None and destination.counterparty != payload.counterparty:
            problems.append(
                FieldProblem(
                    "payload.counterparty",
                    f"destination {destination.name!r} belongs to {destination.counterparty!r}",
                    f'set counterparty to "{destination.counterparty}"',
                )
            )
        return problems

    def capability_problems(self, payload: BaseModel, capabilities: Any) -> list[FieldProblem]:
        return []

    def auto_send_after_s(self, payload: BaseModel) -> int | None:
        assert isinstance(payload, MessageSendV1)
        return payload.auto_send_after_s

    def auto_send_limits(self, settings: Any) -> dict[str, int]:
        """The time box each destination allows now (workers/auto_send.py: the clock's
        claim re-checks it); a destination without auto_send_max_s is not named."""
        assert isinstance(settings, MessageSettings)
        return {
            destination_ref(destination.name): destination.auto_send_max_s
            for destination in settings.destinations
            if destination.auto_send_max_s is not None
        }

    def notional(self, payload: BaseModel, settings: Any, capabilities: Any) -> Amount | None:
        return None  # a message moves no amount

    def preconditions(self, payload: BaseModel, settings: Any, reading: Any) -> dict[str, Any]:
        """The baseline gate and the signal link (`reading`: Readings, or None: neither)."""
        assert isinstance(payload, MessageSendV1)
        readings = reading if isinstance(reading, Readings) else Readings()
        said = gate(readings.baseline, forced=payload.force_despite_signed_contract is True)
        if said.problems:
            raise ProblemsFound(said.problems, code=REFUSAL_CODE)
        additions: dict[str, Any] = {"terms": []}
        if payload.signal_id is not None:
            problem = signal_problem(payload.signal_id, readings.signal, payload.destination)
            if problem is not None:
                raise ProblemsFound([problem], code=UNKNOWN_SIGNAL)
            assert readings.signal is not None
            additions = signal_additions(readings.signal)
        if said.stamp:
            additions["terms"].append({"name": BASELINE_TERM, "value": said.stamp})
        return additions

    def filing_receipt(self, payload: BaseModel, settings: Any) -> Notice | None:
        """Its destination's internal ops chat hears of the draft, if it has one."""
        assert isinstance(payload, MessageSendV1) and isinstance(settings, MessageSettings)
        destination = settings.destination(payload.destination)
        if destination is None or destination.ops_chat_id is None:
            return None
        return Notice(destination.ops_chat_id, filing_receipt_text(payload))
