"""Who may ask the text listener what, where: a pure function over rules as data.

A text command is answered with data only where that data is already shown: in an
audience's own chat (its cards are posted there), or in p2p to a person who operates an
audience (they decide on its cards), and only to people of an allowed tenant. A message
destination's chat belongs to the counterparty: the bot says nothing there, not even help.
Anywhere else it says one neutral line, which tells nothing about what exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Answer(StrEnum):
    DATA = "data"  # the command, over `Verdict.audiences` only
    NEUTRAL = "neutral"  # one line with no data
    SILENT = "silent"  # no reply at all


@dataclass(frozen=True)
class Asker:
    """Who asked, and where, as the envelope says."""

    chat_id: str
    p2p: bool
    open_id: str
    # the installation's tenant (header) and the sender's own: in a chat shared with another
    # organization, an outsider's message arrives under our tenant_key with their own
    tenant_key: str
    sender_tenant_key: str

    @classmethod
    def from_envelope(cls, envelope: dict[str, Any]) -> Asker:
        event = _mapping(envelope.get("event"))
        message = _mapping(event.get("message"))
        sender = _mapping(event.get("sender"))
        return cls(
            chat_id=_text(message.get("chat_id")),
            p2p=message.get("chat_type") == "p2p",
            open_id=_text(_mapping(sender.get("sender_id")).get("open_id")),
            tenant_key=_text(_mapping(envelope.get("header")).get("tenant_key")),
            sender_tenant_key=_text(sender.get("tenant_key")),
        )


@dataclass(frozen=True)
class AudienceScope:
    name: str
    chat_id: str
    operators: frozenset[str]


@dataclass(frozen=True)
class Scope:
    """What the configuration says about chats and people."""

    audiences: tuple[AudienceScope, ...] = ()
    destination_chats: frozenset[str] = frozenset()
    tenant_keys: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Verdict:
    answer: Answer
    why: str  # for the inbox record and logs, never shown in a chat
    audiences: frozenset[str] = field(default_factory=frozenset)


Rule = Callable[[Asker, Scope], Verdict | None]


def destination_chat(asker: Asker, scope: Scope) -> Verdict | None:
    # First: the counterparty must not even learn that a bot answers commands here.
    if asker.chat_id in scope.destination_chats:
        return Verdict(Answer.SILENT, "a message destination's chat")
    return None


def foreign_tenant(asker: Asker, scope: Scope) -> Verdict | None:
    if {asker.tenant_key, asker.sender_tenant_key} <= scope.tenant_keys - {""}:
        return None
    return Verdict(Answer.NEUTRAL, "a tenant that is not allowed")


def audience_chat(asker: Asker, scope: Scope) -> Verdict | None:
    if asker.p2p:
        return None
    names = frozenset(a.name for a in scope.audiences if a.chat_id == asker.chat_id)
    return Verdict(Answer.DATA, "an audience's chat", names) if names else None


def operator_p2p(asker: Asker, scope: Scope) -> Verdict | None:
    if not asker.p2p:
        return None
    names = frozenset(a.name for a in scope.audiences if asker.open_id in a.operators)
    return Verdict(Answer.DATA, "an operator in p2p", names) if names else None


SCOPE_RULES: Sequence[Rule] = (destination_chat, foreign_tenant, audience_chat, operator_p2p)
ELSEWHERE = Verdict(Answer.NEUTRAL, "no audience here")


def scope_of(asker: Asker, scope: Scope, rules: Iterable[Rule] = SCOPE_RULES) -> Verdict:
    """The first rule that decides; a place no rule knows gets the neutral line."""
    return next((verdict for rule in rules if (verdict := rule(asker, scope))), ELSEWHERE)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
