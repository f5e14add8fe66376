"""message.send: its payload (schema version 1) and the domain that plugs it in."""

from __future__ import annotations

import asyncio
import hashlib
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, Field, StringConstraints, ValidationInfo
from pydantic_core import PydanticCustomError

from cards.plain_text import NAME_MAX_CHARS, people_text
from store.problems import FieldProblem, ProblemsFound
from workers.domains.base import STORED as STORED  # the stored-payload context, re-exported
from workers.domains.base import (
    DemoSetup,
    Domain,
    Example,
    FilingReads,
    Notice,
    Projection,
    RunnerContext,
    terms,
)
from workers.domains.message.baseline import (
    BASELINE_TERM,
    CONTRACT_STATUSES,
    REFUSAL_CODE,
    BaselineUnavailable,
    FileBaseline,
    gate,
    load_baseline_file,
    read_baseline,
)
from workers.domains.message.examples import EXAMPLES
from workers.domains.message.linkage import (
    UNKNOWN_SIGNAL,
    Readings,
    signal_additions,
    signal_problem,
)
from workers.domains.message.settings import Destination, MessageSettings
from workers.domains.message.text import draft_text_problem, outbound_text
from workers.domains.message.words import OUTCOMES, WORDS
from workers.domains.types import Name, OpenId, StrictModel, TextProblem, normalise_newlines

if TYPE_CHECKING:
    from workers.domains.message.runner import MessageRunner

MessageId = Annotated[str, StringConstraints(pattern=r"^om_[A-Za-z0-9_-]{1,120}$")]
# Hard ceiling for the schema; the configured cap (max_text_chars) is checked in admit().
TEXT_CEILING = 30000
MAX_MENTIONS = 20
# A payload read back from the store (validated with STORED) was admitted under the rules of
# its day and must load; the runner re-checks what it sends (MessageRunner.prepare).


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


class MessageDomain(Domain[MessageSendV1, MessageSettings]):
    kind = "message.send"
    config_table = "message"
    settings_model = MessageSettings
    payload_models = MappingProxyType({1: MessageSendV1})
    executor_name = "lark-message"
    executor_revision = "1"
    simulated = False
    words = WORDS
    outcomes = OUTCOMES
    examples = EXAMPLES
    supersedes_open_drafts = True
    free_text_fields = frozenset({"text"})

    def project(self, payload: MessageSendV1) -> Projection:
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

    def target_ref(self, payload: MessageSendV1) -> str:
        return destination_ref(payload.destination)

    async def open_runner(
        self, settings: MessageSettings, context: RunnerContext
    ) -> MessageRunner | None:
        """It sends through Lark: without Lark in this process, no runner."""
        if context.lark is None:
            return None
        from workers.domains.message.runner import MessageRunner  # it imports this module

        return MessageRunner(
            context.lark,
            settings,
            clock=context.clock,
            decision_of=context.decision_of,
            people=context.people,
            on_dispatched=context.on_dispatched,
        )

    def admit(self, payload: MessageSendV1, settings: MessageSettings) -> list[FieldProblem]:
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

    def auto_send_after_s(self, payload: MessageSendV1) -> int | None:
        return payload.auto_send_after_s

    def auto_send_limits(self, settings: MessageSettings) -> dict[str, int]:
        """The time box each destination allows now (workers/auto_send.py: the clock's
        claim re-checks it); a destination without auto_send_max_s is not named."""
        return {
            destination_ref(destination.name): destination.auto_send_max_s
            for destination in settings.destinations
            if destination.auto_send_max_s is not None
        }

    async def read_for_filing(
        self, payload: Mapping[str, object], settings: MessageSettings, reads: FilingReads
    ) -> Readings | None:
        """What its destination's baseline source says of the counterparty now (read off the
        loop: a file may sit on a slow disk), and the inbound signal the draft names."""
        name, signal_id = payload.get("destination"), payload.get("signal_id")
        destination = settings.destination(name) if isinstance(name, str) else None
        if destination is None:
            return None  # admit refuses an unknown destination on its own
        baseline = None
        if destination.baseline_file is not None:
            source = FileBaseline(destination.baseline_file)
            baseline = await asyncio.to_thread(read_baseline, source, destination.counterparty)
        signal = await reads.signal(signal_id[:128]) if isinstance(signal_id, str) else None
        return Readings(baseline, signal)

    def preconditions(
        self, payload: MessageSendV1, settings: MessageSettings, reading: object
    ) -> Projection:
        """The baseline gate and the signal link (`reading`: Readings, or None: neither)."""
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

    def filing_receipt(self, payload: MessageSendV1, settings: MessageSettings) -> Notice | None:
        """Its destination's internal ops chat hears of the draft, if it has one."""
        destination = settings.destination(payload.destination)
        if destination is None or destination.ops_chat_id is None:
            return None
        return Notice(destination.ops_chat_id, filing_receipt_text(payload))

    def config_problems(self, settings: MessageSettings) -> list[FieldProblem]:
        names = [destination.name for destination in settings.destinations]
        problems = [
            FieldProblem("destinations", f"destination {name!r} twice", "rename one")
            for name in sorted({name for name in names if names.count(name) > 1})
        ]
        return problems + _baseline_file_problems(settings)

    def outside_chats(self, settings: MessageSettings) -> Mapping[str, str]:
        """Counterparty chats (chat id -> destination name)."""
        return {destination.chat_id: destination.name for destination in settings.destinations}

    def internal_chats(self, settings: MessageSettings) -> list[tuple[str, str, str]]:
        return [
            (f"destinations[{i}].ops_chat_id", destination.ops_chat_id, "filing receipts")
            for i, destination in enumerate(settings.destinations)
            if destination.ops_chat_id is not None
        ]

    def demo(self, chats: Mapping[str, str], workdir: Path) -> DemoSetup:
        """One destination (the counterparty's chat, receipts in the ops chat), one draft."""
        draft = {
            "destination": "acme",
            "counterparty": "acme-supplier",
            "text": "Hello Acme, the 40 units ship on Friday.",
            "priority": "P2",
        }
        return DemoSetup(
            table=self.dev_table(chats, workdir),
            proposals=(Example("message draft", "a draft to a counterparty", draft),),
            expect={"message draft": ("Sent",)},
            outside_posts=1,
        )

    def dev_table(self, chats: Mapping[str, str], data_dir: Path) -> dict[str, object]:
        """One destination: the counterparty's chat, filing receipts in the ops chat."""
        destination = {"name": "acme", "chat_id": chats["counterparty"]}
        destination |= {"counterparty": "acme-supplier", "ops_chat_id": chats["ops"]}
        return {"enabled": True, "destinations": [destination]}


def _baseline_file_problems(settings: MessageSettings) -> list[FieldProblem]:
    """A destination's baseline file reads as one now (at run time a file that cannot be
    read files drafts stamped as unchecked; a file broken from the start is a mistake)."""
    problems = []
    for i, destination in enumerate(settings.destinations):
        if destination.baseline_file is None:
            continue
        try:
            load_baseline_file(destination.baseline_file)
        except BaselineUnavailable as error:
            problems.append(
                FieldProblem(
                    f"destinations[{i}].baseline_file",
                    str(error),
                    'write it as {"counterparties": {"<counterparty>": {"contract": {"status": '
                    f'"<one of {", ".join(CONTRACT_STATUSES)}>", ...}}, "facts": [...]}}}}}} '
                    "(docs/operations.md), or leave baseline_file out",
                )
            )
    return problems
