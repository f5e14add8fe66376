"""The operation envelope and its confirm digest (docs/architecture.md §1, principle 2)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kernel.canonical import canonical_json, sha256_hex
from kernel.timeutil import iso_utc
from store.vocabulary import World

DIGEST_SCHEME = "countersign.confirm.v1"


@dataclass(frozen=True)
class Audience:
    name: str
    chat_id: str
    operators: tuple[str, ...]
    allow_self_approval: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "chat_id": self.chat_id,
            "operators": sorted(self.operators),
            "allow_self_approval": self.allow_self_approval,
        }


@dataclass(frozen=True)
class Approval:
    """What the approval policy asks of this operation, fixed when it is filed: how many
    distinct operators must confirm, which of them may (the audience's operators, or the
    narrower set a rule names), the rule that applied and why, the notional the domain
    computed, and the digest of the audience's policy as configured then (a policy changed
    since makes the card stale). Bound into the confirm digest like every other term."""

    required: int = 1
    approvers: tuple[str, ...] = ()  # empty: every operator of the audience
    rule: str | None = None  # the rule that applied
    threshold: str | None = None  # its amount, "50,000 USDC" (None: a rule by kind alone)
    notional: str | None = None  # "62000.00 USDC" (or "unknown USDC"), as the domain computed
    policy: str = ""  # bot.config.policy.policy_digest of the audience at filing
    # the chat a copy of the card goes to at the reminder; clicks there count the same
    escalation_chat_id: str | None = None

    def approvers_of(self, audience: Audience) -> tuple[str, ...]:
        return self.approvers or audience.operators

    @property
    def notional_known(self) -> bool:
        return self.notional is not None and not self.notional.startswith("unknown")

    @property
    def why(self) -> str | None:
        """Why it needs what it needs, in words (cards/approval.py words it per language)."""
        if self.rule is None:
            return None
        if self.threshold is None:
            return f"rule {self.rule}"
        if not self.notional_known:
            return f"notional unknown, counted as above {self.threshold}"
        return f"above {self.threshold}"

    def as_json(self) -> dict[str, Any]:
        return {
            "required": self.required,
            "approvers": sorted(self.approvers),
            "rule": self.rule,
            "threshold": self.threshold,
            "notional": self.notional,
            "policy": self.policy,
            "escalation_chat_id": self.escalation_chat_id,
        }

    def terms_json(self) -> dict[str, Any]:
        """What the `approval` column keeps (the rest has columns of its own)."""
        return {"rule": self.rule, "threshold": self.threshold, "notional": self.notional}


@dataclass(frozen=True)
class Conversation:
    """A Lark conversation the conclusion is replied into (e.g. where an agent discussed it)."""

    chat_id: str
    message_id: str

    def as_json(self) -> dict[str, Any]:
        return {"chat_id": self.chat_id, "message_id": self.message_id}


@dataclass(frozen=True)
class CallbackRoute:
    """The proposer's HTTPS endpoint; the HMAC secret is named, never carried."""

    url: str
    secret_ref: str

    def as_json(self) -> dict[str, Any]:
        return {"url": self.url, "secret_ref": self.secret_ref}


@dataclass(frozen=True)
class Source:
    proposer: str
    request_id: str
    requester_open_id: str | None = None
    context: Mapping[str, Any] = field(default_factory=dict)
    conversation: Conversation | None = None
    callback: CallbackRoute | None = None
    # why, in the proposer's words (one line of plain text, shown on the card)
    reason: str | None = None

    def routes(self) -> dict[str, Any] | None:
        """Where the conclusion goes back (None: only the bounded wait on the API)."""
        routes = {}
        if self.conversation is not None:
            routes["conversation"] = self.conversation.as_json()
        if self.callback is not None:
            routes["callback"] = self.callback.as_json()
        return routes or None

    @staticmethod
    def routes_from(
        data: Mapping[str, Any] | None,
    ) -> tuple[Conversation | None, CallbackRoute | None]:
        data = data or {}
        conversation = data.get("conversation")
        callback = data.get("callback")
        return (
            Conversation(**conversation) if conversation else None,
            CallbackRoute(**callback) if callback else None,
        )

    def as_json(self) -> dict[str, Any]:
        found = {
            "proposer": self.proposer,
            "request_id": self.request_id,
            "requester_open_id": self.requester_open_id,
            "context": dict(self.context),
        }
        if self.reason is not None:  # left out when absent: older digests stay what they were
            found["reason"] = self.reason
        # routes are terms like any other (frozen into the confirm digest); absent ones are
        # left out so digests of proposals without routes stay what they were
        found.update(self.routes() or {})
        return found


@dataclass(frozen=True)
class Envelope:
    """Everything an operator confirms. Payload and projection are canonical JSON text."""

    id: str
    kind: str
    schema_version: int
    executor_name: str
    executor_revision: str
    simulated: bool
    payload: str
    projection: str
    audience: Audience
    target_ref: str
    expires_at: datetime
    source: Source
    approval: Approval = field(default_factory=Approval)
    # which world it acts in (None: not a venue); `simulated` says whether anything of it
    # leaves this machine (world simulated or emulator)
    world: World | None = None

    @property
    def payload_digest(self) -> str:
        return sha256_hex(self.payload)

    @property
    def projection_digest(self) -> str:
        return sha256_hex(self.projection)


def implied_world(simulated: bool) -> World | None:
    """The world an operation acted in before worlds were recorded (migration 0022)."""
    return World.SIMULATED if simulated else None


def confirm_digest(envelope: Envelope) -> str:
    """sha256 (hex) over every effect-bearing part of the envelope."""
    executor: dict[str, Any] = {
        "name": envelope.executor_name,
        "revision": envelope.executor_revision,
        "simulated": envelope.simulated,
    }
    # the world is bound; the one `simulated` already implied is left out, so digests of
    # operations filed before worlds were recorded stay what they were (with `simulated`
    # bound too, every world still gives another digest)
    if envelope.world != implied_world(envelope.simulated):
        executor["world"] = envelope.world.value if envelope.world else None
    return sha256_hex(
        canonical_json(
            {
                "scheme": DIGEST_SCHEME,
                "id": envelope.id,
                "kind": envelope.kind,
                "schema_version": envelope.schema_version,
                "executor": executor,
                "payload_digest": envelope.payload_digest,
                "projection_digest": envelope.projection_digest,
                "audience": envelope.audience.as_json(),
                "target_ref": envelope.target_ref,
                "expires_at": iso_utc(envelope.expires_at),
                "source": envelope.source.as_json(),
                "approval": envelope.approval.as_json(),
            }
        )
    )
