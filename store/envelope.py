"""The operation envelope and its confirm digest (DESIGN principle 2)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from store.canonical import canonical_json, sha256_hex
from store.timeutil import iso_utc

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
class Source:
    proposer: str
    request_id: str
    requester_open_id: str | None = None
    context: Mapping[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "proposer": self.proposer,
            "request_id": self.request_id,
            "requester_open_id": self.requester_open_id,
            "context": dict(self.context),
        }


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

    @property
    def payload_digest(self) -> str:
        return sha256_hex(self.payload)

    @property
    def projection_digest(self) -> str:
        return sha256_hex(self.projection)


def confirm_digest(envelope: Envelope) -> str:
    """sha256 (hex) over every effect-bearing part of the envelope."""
    return sha256_hex(
        canonical_json(
            {
                "scheme": DIGEST_SCHEME,
                "id": envelope.id,
                "kind": envelope.kind,
                "schema_version": envelope.schema_version,
                "executor": {
                    "name": envelope.executor_name,
                    "revision": envelope.executor_revision,
                    "simulated": envelope.simulated,
                },
                "payload_digest": envelope.payload_digest,
                "projection_digest": envelope.projection_digest,
                "audience": envelope.audience.as_json(),
                "target_ref": envelope.target_ref,
                "expires_at": iso_utc(envelope.expires_at),
                "source": envelope.source.as_json(),
            }
        )
    )
