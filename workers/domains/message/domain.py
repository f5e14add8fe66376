"""message.send plugged in: `MessageDomain`, the registration that names its payload
(`schema.py`), settings, runner, filing checks (destination, baseline, signal), receipt,
words, examples and demo."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kernel.problems import FieldProblem, ProblemsFound
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
from workers.domains.message.runner import MessageRunner
from workers.domains.message.schema import (
    EXECUTOR_NAME,
    EXECUTOR_REVISION,
    KIND,
    MessageSendV1,
    destination_ref,
    filing_receipt_text,
    text_sha256,
)
from workers.domains.message.settings import Destination, MessageSettings
from workers.domains.message.words import OUTCOMES, WORDS


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
    kind = KIND
    config_table = "message"
    settings_model = MessageSettings
    payload_models = MappingProxyType({1: MessageSendV1})
    executor_name = EXECUTOR_NAME
    executor_revision = EXECUTOR_REVISION
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
