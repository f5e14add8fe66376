"""message.send payload, schema version 1."""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, StringConstraints

from store.problems import FieldProblem
from workers.domains.base import terms
from workers.domains.message.settings import MessageSettings
from workers.domains.types import Name, StrictModel, sanitize_text

MessageId = Annotated[str, StringConstraints(pattern=r"^om_[A-Za-z0-9_-]{1,120}$")]
# Hard ceiling for the schema; the configured cap (max_text_chars) is checked in admit().
TEXT_CEILING = 30000


class MessageSendV1(StrictModel):
    destination: Name
    counterparty: Name
    text: Annotated[str, AfterValidator(lambda value: sanitize_text(value, cap=TEXT_CEILING))]
    priority: Literal["P0", "P1", "P2", "P3"]
    reply_to: MessageId | None = None


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
                    "text": payload.text,
                    "text_sha256": text_sha256(payload.text),
                }
            ),
            "simulated": self.simulated,
        }

    def target_ref(self, payload: BaseModel) -> str:
        assert isinstance(payload, MessageSendV1)
        return f"destination:{payload.destination}"

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
        elif destination.counterparty != payload.counterparty:
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
