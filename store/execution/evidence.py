"""An attempt's evidence: what its runner must be able to show when it reconciles the
attempt later, in whichever replica (a signed request and its nonce, say), kept in
`attempts.evidence` as canonical JSON.

Written once, before the request leaves: one conditional write that fills an empty column.
The same evidence again (a retried pass) changes nothing; other evidence for the same client
id is refused, so what was recorded before a request left can never be replaced by what a
later pass would have sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, select, update

from kernel.canonical import canonical_json
from store.authority.store import Store
from store.schema.tables import AttemptRow

# a signed request is a few kilobytes; anything near this is a runner's bug, not evidence
MAX_EVIDENCE_CHARS = 64 * 1024


class EvidenceRefused(Exception):
    """Evidence that cannot be recorded for this client id, and why (nothing was written)."""

    def __init__(self, client_id: str, reason: str) -> None:
        super().__init__(f"evidence for {client_id}: {reason}")
        self.client_id = client_id
        self.reason = reason


class NoSuchAttempt(EvidenceRefused):
    """No attempt has this client id: evidence belongs to a recorded attempt."""

    def __init__(self, client_id: str) -> None:
        super().__init__(
            client_id, "no attempt has this client id; record the attempt (begin_dispatch) first"
        )


class EvidenceConflict(EvidenceRefused):
    """Other evidence is already recorded for this client id: it is written once."""

    def __init__(self, client_id: str) -> None:
        super().__init__(
            client_id,
            "other evidence is already recorded, and evidence is written once; "
            "read it back (evidence_of) and reconcile with what was recorded",
        )


def encoded(client_id: str, evidence: Mapping[str, Any]) -> str:
    """The evidence as stored: canonical JSON of an object (floats refused, as everywhere)."""
    if not isinstance(evidence, Mapping):
        raise EvidenceRefused(client_id, "evidence must be a JSON object (a mapping)")
    text = canonical_json(evidence)
    if len(text) > MAX_EVIDENCE_CHARS:
        raise EvidenceRefused(
            client_id,
            f"is {len(text)} characters; the cap is {MAX_EVIDENCE_CHARS} "
            "(keep the signed request and its nonce, not the answers)",
        )
    return text


async def record_evidence(store: Store, client_id: str, evidence: Mapping[str, Any]) -> None:
    """Record `evidence` for the attempt with `client_id` in one durable write; the same
    evidence again is a no-op; other evidence raises EvidenceConflict, an unknown client id
    NoSuchAttempt (both: nothing written)."""
    text = encoded(client_id, evidence)

    def write(conn: Connection) -> None:
        filled = conn.execute(
            update(AttemptRow)
            .where(AttemptRow.client_id == client_id, AttemptRow.evidence.is_(None))
            .values(evidence=text)
        )
        if filled.rowcount == 1:
            return
        recorded = conn.execute(
            select(AttemptRow.evidence).where(AttemptRow.client_id == client_id)
        ).one_or_none()
        if recorded is None:
            raise NoSuchAttempt(client_id)
        if recorded.evidence != text:
            raise EvidenceConflict(client_id)

    await store.transact(write)


async def evidence_of(store: Store, client_id: str) -> dict[str, Any] | None:
    """The evidence recorded for `client_id` (None: none recorded, or no such attempt)."""
    recorded = await store.fetch(
        lambda conn: conn.execute(
            select(AttemptRow.evidence).where(AttemptRow.client_id == client_id)
        ).scalar_one_or_none()
    )
    if recorded is None:
        return None
    found: dict[str, Any] = json.loads(recorded)
    return found
