"""Filing a proposal, as SQL inside one write: the operation inserted with its digest and
audit row, or the one this (proposer, request_id) already made replayed (or refused as a
`RequestConflict`), the open drafts a superseding proposal replaces, and the filing
receipt a draft announced in its ops chat has due.

Plain functions of a sync `Connection`; `Store.propose` runs `file_draft` as one write.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

from sqlalchemy import Connection, insert, or_, select
from ulid import ULID

from kernel.canonical import canonical_digest, canonical_json
from kernel.timeutil import Clock
from store.authority.envelope import Envelope, Source, confirm_digest
from store.authority.proposals import (
    ActiveClaim,
    Draft,
    Proposed,
    RequestConflict,
    content_differences,
)
from store.authority.records import Operation
from store.authority.transitions import audit, load_operation, transition
from store.lifecycle import Event, State, sources_for
from store.schema.tables import AuditRow, DeliveryRow, OperationRow, constant
from store.vocabulary import Channel, DeliveryState, Execution, Stage


def file_draft(conn: Connection, clock: Clock, draft: Draft, content: str) -> Proposed:
    """The operation `draft` makes (`content`: its canonical request content), or the one
    this (proposer, request_id) already made."""
    again = replayed(conn, draft.source, content)
    if again is not None:
        return again
    if draft.supersede_open and (sending := being_sent(conn, draft.kind, draft.target_ref)):
        raise ActiveClaim(sending, draft.target_ref)
    op = insert_operation(conn, clock, draft, content)
    if draft.announce_filing:
        enqueue_filing_receipt(conn, op)
    superseded: tuple[str, ...] = ()
    if draft.supersede_open:
        superseded = supersede_open(conn, clock, op, f"proposer:{draft.source.proposer}")
    return Proposed(op, created=True, superseded=superseded)


def filing_receipt_digest(op: Operation) -> str:
    return canonical_digest({"operation": op.id, "filed": op.confirm_digest})


def enqueue_filing_receipt(conn: Connection, op: Operation) -> None:
    """The outbox row that tells the draft's internal ops chat it was filed: written with
    the operation, so a crash cannot lose it, and once (a stage concludes once per channel).
    The delivery worker asks the domain for the chat and the line when it sends."""
    conn.execute(
        insert(DeliveryRow).values(
            id=str(ULID.from_datetime(op.created_at)),
            operation_id=op.id,
            channel=Channel.OPS_CHAT.value,
            stage=Stage.INITIAL.value,
            outcome_digest=filing_receipt_digest(op),
            state=DeliveryState.PENDING.value,
            attempts=0,
            due_at=op.created_at,
            created_at=op.created_at,
        )
    )


def by_request(conn: Connection, source: Source) -> tuple[Operation, str] | None:
    row = (
        conn.execute(
            select(OperationRow.__table__).where(
                OperationRow.source_proposer == source.proposer,
                OperationRow.source_request_id == source.request_id,
            )
        )
    ).one_or_none()
    if row is None:
        return None
    return Operation.from_row(row), str(row.request_content)


def replay(existing: tuple[Operation, str], content: str) -> Proposed:
    op, stored = existing
    if stored != content:
        raise RequestConflict(op.id, content_differences(json.loads(stored), json.loads(content)))
    return Proposed(op, created=False)


def replayed(conn: Connection, source: Source, content: str) -> Proposed | None:
    """What filing this (proposer, request_id) again answers, or None if it filed nothing:
    the operation, and the drafts its first filing superseded (a retry hears the same)."""
    existing = by_request(conn, source)
    if existing is None:
        return None
    again = replay(existing, content)
    return replace(again, superseded=superseded_by(conn, again.operation.id))


def superseded_by(conn: Connection, operation_id: str) -> tuple[str, ...]:
    """The operations `operation_id` superseded when it was filed (their audit entries name
    it as the evidence)."""
    return tuple(
        conn.execute(
            select(AuditRow.operation_id)
            # the event as a constant: SQLite uses a partial index only for its own terms
            .where(AuditRow.event == constant(Event.SUPERSEDED.value))
            .where(AuditRow.evidence == operation_id)
            .order_by(AuditRow.operation_id)
        ).scalars()
    )


# an executor that ended here has resolved: a send done, refused before it left, or an unknown
# reconciled; anything else after a claim is still under way (or unknown: reconciling)
RESOLVED = (
    Execution.COMPLETED.value,
    Execution.RECONCILED.value,
    Execution.PREFLIGHT_REJECTED.value,
    Execution.RESERVATION_REFUSED.value,
)


def being_sent(conn: Connection, kind: str, target_ref: str) -> str | None:
    """The claimed operation of this kind on this target whose execution has not resolved."""
    return conn.execute(
        select(OperationRow.id)
        .where(
            OperationRow.kind == kind,
            OperationRow.target_ref == target_ref,
            OperationRow.state.in_((State.CLAIMED.value, State.OUTCOME_OBSERVED.value)),
            or_(
                OperationRow.execution_state.is_(None),
                OperationRow.execution_state.not_in(RESOLVED),
            ),
        )
        .limit(1)
    ).scalar_one_or_none()


def supersede_open(conn: Connection, clock: Clock, newer: Operation, actor: str) -> tuple[str, ...]:
    """Every other unclaimed operation of this kind on this target gives way to `newer`; the
    ids of those that did. Each one's audit entry names `newer` as its evidence."""
    open_states = [state.value for state in sources_for(Event.SUPERSEDED)]
    older = (
        (
            conn.execute(
                select(OperationRow.id)
                .where(
                    OperationRow.kind == newer.kind,
                    OperationRow.target_ref == newer.envelope.target_ref,
                    OperationRow.state.in_(open_states),
                    OperationRow.id != newer.id,
                )
                .order_by(OperationRow.id)
            )
        )
        .scalars()
        .all()
    )
    return tuple(
        operation_id
        for operation_id in older
        if _supersede(conn, clock, operation_id, actor, newer.id, open_states)
    )


def _supersede(
    conn: Connection,
    clock: Clock,
    operation_id: str,
    actor: str,
    newer_id: str,
    open_states: list[str],
) -> bool:
    """Supersede one open operation, as often as another writer moved it first while it
    stays open: on PostgreSQL the card worker may post its card (prepared -> awaiting) between
    the read and the write, and the draft must not stay open beside the newer one for that."""
    while True:
        if transition(conn, clock, operation_id, Event.SUPERSEDED, actor, evidence=newer_id):
            return True
        state = conn.execute(
            select(OperationRow.state).where(OperationRow.id == operation_id)
        ).scalar_one()
        if state not in open_states:  # claimed, expired or cancelled meanwhile: it stays so
            return False


def insert_operation(conn: Connection, clock: Clock, draft: Draft, content: str) -> Operation:
    now = clock()
    expires_at = (now + timedelta(seconds=draft.expires_in_s)).replace(microsecond=0)
    approval = draft.approval
    if not approval.approvers:  # explicit, as stored: the digest binds who may confirm
        approval = replace(approval, approvers=tuple(sorted(draft.audience.operators)))
    envelope = Envelope(
        id=str(ULID.from_datetime(now)),
        kind=draft.kind,
        schema_version=draft.schema_version,
        executor_name=draft.executor_name,
        executor_revision=draft.executor_revision,
        simulated=draft.simulated,
        payload=canonical_json(draft.payload),
        projection=canonical_json(draft.projection),
        audience=draft.audience,
        target_ref=draft.target_ref,
        expires_at=expires_at,
        source=draft.source,
        approval=approval,
        world=draft.acts_in,
    )
    digest = confirm_digest(envelope)
    conn.execute(
        insert(OperationRow).values(
            id=envelope.id,
            created_at=now,
            updated_at=now,
            kind=envelope.kind,
            schema_version=envelope.schema_version,
            executor_name=envelope.executor_name,
            executor_revision=envelope.executor_revision,
            simulated=envelope.simulated,
            world=envelope.world.value if envelope.world else None,
            payload=envelope.payload,
            payload_digest=envelope.payload_digest,
            projection=envelope.projection,
            projection_digest=envelope.projection_digest,
            audience_name=envelope.audience.name,
            audience_chat_id=envelope.audience.chat_id,
            audience_operators=canonical_json(sorted(envelope.audience.operators)),
            allow_self_approval=envelope.audience.allow_self_approval,
            target_ref=envelope.target_ref,
            expires_at=envelope.expires_at,
            source_proposer=envelope.source.proposer,
            source_request_id=envelope.source.request_id,
            source_requester_open_id=envelope.source.requester_open_id,
            source_context=canonical_json(envelope.source.context),
            source_reason=envelope.source.reason,
            source_routes=(
                canonical_json(routes) if (routes := envelope.source.routes()) else None
            ),
            request_content=content,
            confirm_digest=digest,
            required_confirmations=envelope.approval.required,
            approvers=canonical_json(sorted(envelope.approval.approvers)),
            approval=canonical_json(envelope.approval.terms_json()),
            policy_digest=envelope.approval.policy,
            escalation_chat_id=envelope.approval.escalation_chat_id,
            state=State.PREPARED.value,
            version=1,
            card_due_at=now,
            auto_send_at=(
                now + timedelta(seconds=draft.auto_send_after_s)
                if draft.auto_send_after_s
                else None
            ),
            remind_at=(
                expires_at - timedelta(seconds=draft.remind_before_s)
                if draft.remind_before_s and draft.remind_before_s < draft.expires_in_s
                else None
            ),
        )
    )
    audit(
        conn,
        envelope.id,
        f"proposer:{draft.source.proposer}",
        "proposed",
        None,
        State.PREPARED,
        at=now,
    )
    op = load_operation(conn, envelope.id)
    assert op is not None
    return op
