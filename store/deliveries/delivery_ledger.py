"""Result return: the outbox of conclusions going back to proposers (reply, signed webhook).

A conclusion is enqueued (`store.deliveries.conclusions`) in the same transaction as the outcome or
closing that makes it due, so it cannot be lost by a crash; its id is the delivery id receivers dedupe on. One conclusion
per stage and channel: the initial one when the first stage settles (or is unknown), one
linked follow-up when a reconciliation settles it. Delivering never executes anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Insert, func, insert, select, update

from store.authority.store import Store
from store.authority.transitions import audit
from store.backend.leases import lease_rows, next_due
from store.schema.tables import DeliveryAttemptRow, DeliveryRow
from store.vocabulary import DeliveryState

DETAIL_MAX = 300
DELIVERIES_ACTOR = "system:deliveries"
UNDELIVERED = (DeliveryState.PENDING.value, DeliveryState.FAILED.value)


@dataclass(frozen=True)
class Delivery:
    id: str
    operation_id: str
    channel: str
    stage: str
    outcome_digest: str
    reconciles_digest: str | None
    state: str
    attempts: int
    created_at: datetime
    delivered_at: datetime | None
    result: str | None
    last_error: str | None

    @classmethod
    def from_row(cls, row: Any) -> Delivery:
        return cls(
            row.id,
            row.operation_id,
            row.channel,
            row.stage,
            row.outcome_digest,
            row.reconciles_digest,
            row.state,
            row.attempts,
            row.created_at,
            row.delivered_at,
            row.result,
            row.last_error,
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "delivery_id": self.id,
            "operation_id": self.operation_id,
            "channel": self.channel,
            "stage": self.stage,
            "outcome_digest": self.outcome_digest,
            "state": self.state,
            "attempts": self.attempts,
            "result": self.result,
            "last_error": self.last_error,
        }


@dataclass(frozen=True)
class DeliveryAttempt:
    at: datetime
    ok: bool
    code: int | None
    detail: str | None


class DeliveryLedger:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def lease_due(self, limit: int = 20, lease_s: float = 60) -> list[Delivery]:
        rows = await lease_rows(self.store, DeliveryRow, DeliveryRow.due_at, limit, lease_s)
        return [Delivery.from_row(row) for row in rows]

    async def next_due(self) -> datetime | None:
        """When the next delivery falls due (a retry's backoff, a lease running out)."""
        return await next_due(self.store, DeliveryRow.due_at)

    async def delivered(self, delivery_id: str, result: str, code: int | None = None) -> None:
        now = self.store.clock()
        delivered = (
            update(DeliveryRow)
            .where(DeliveryRow.id == delivery_id)
            .values(
                state=DeliveryState.DELIVERED.value,
                due_at=None,
                delivered_at=now,
                result=result[:128],
                attempts=DeliveryRow.attempts + 1,
                last_error=None,
            )
        )

        def write(conn: Connection) -> None:
            done = conn.execute(
                delivered.returning(
                    DeliveryRow.operation_id, DeliveryRow.channel, DeliveryRow.outcome_digest
                )
            ).first()
            conn.execute(_attempt_logged(delivery_id, now, True, code, result))
            if done is not None:  # the conclusion reached its proposer: the audit log says so
                audit(
                    conn,
                    done.operation_id,
                    DELIVERIES_ACTOR,
                    f"delivered:{done.channel}",
                    None,
                    None,
                    at=now,
                    evidence=done.outcome_digest,
                )

        await self.store.transact(write)

    async def failed(
        self, delivery_id: str, code: int | None, detail: str, *, retry_in_s: float | None
    ) -> None:
        """One failed attempt: due again after `retry_in_s`, or `failed` for good (None)."""
        now = self.store.clock()
        values: dict[str, Any] = {
            "attempts": DeliveryRow.attempts + 1,
            "last_error": detail[:DETAIL_MAX],
        }
        if retry_in_s is None:
            values.update(state=DeliveryState.FAILED.value, due_at=None)
        else:
            values.update(due_at=now + timedelta(seconds=retry_in_s))
        failed = update(DeliveryRow).where(DeliveryRow.id == delivery_id).values(**values)

        def write(conn: Connection) -> None:
            conn.execute(failed)
            conn.execute(_attempt_logged(delivery_id, now, False, code, detail))

        await self.store.transact(write)

    async def retry(self, delivery_id: str) -> Delivery | None:
        """An operator's replay of a failed delivery: same id, attempts counted afresh."""
        replayed = (
            update(DeliveryRow)
            .where(DeliveryRow.id == delivery_id, DeliveryRow.state == DeliveryState.FAILED.value)
            .values(state=DeliveryState.PENDING.value, due_at=self.store.clock(), attempts=0)
        )

        def write(conn: Connection) -> Delivery | None:
            if conn.execute(replayed).rowcount != 1:
                return None
            row = conn.execute(
                select(DeliveryRow.__table__).where(DeliveryRow.id == delivery_id)
            ).one()
            return Delivery.from_row(row)

        return await self.store.transact(write)

    async def get(self, delivery_id: str) -> Delivery | None:
        async with self.store.read() as conn:
            row = (
                await conn.execute(
                    select(DeliveryRow.__table__).where(DeliveryRow.id == delivery_id)
                )
            ).one_or_none()
        return None if row is None else Delivery.from_row(row)

    async def find(
        self, *, operation_id: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[Delivery]:
        query = select(DeliveryRow.__table__).order_by(DeliveryRow.id.desc()).limit(limit)
        if operation_id is not None:
            query = query.where(DeliveryRow.operation_id == operation_id)
        if state is not None:
            query = query.where(DeliveryRow.state == state)
        async with self.store.read() as conn:
            rows = (await conn.execute(query)).all()
        return [Delivery.from_row(row) for row in rows]

    async def attempts(self, delivery_id: str) -> list[DeliveryAttempt]:
        async with self.store.read() as conn:
            rows = (
                await conn.execute(
                    select(DeliveryAttemptRow.__table__)
                    .where(DeliveryAttemptRow.delivery_id == delivery_id)
                    .order_by(DeliveryAttemptRow.id)
                )
            ).all()
        return [DeliveryAttempt(row.at, row.ok, row.code, row.detail) for row in rows]

    async def counts(self) -> dict[str, int]:
        """Deliveries not delivered, by state (pending, failed): work still to do, a seek on
        ix_deliveries_state each. Delivered ones are history, never counted on a request."""
        query = (
            select(DeliveryRow.state, func.count())
            .where(DeliveryRow.state.in_(UNDELIVERED))
            .group_by(DeliveryRow.state)
        )
        async with self.store.read() as conn:
            rows = (await conn.execute(query)).all()
        return {state: int(count) for state, count in rows}


def _attempt_logged(
    delivery_id: str, at: datetime, ok: bool, code: int | None, detail: str | None
) -> Insert:
    """The delivery_attempts row of one attempt."""
    return insert(DeliveryAttemptRow).values(
        delivery_id=delivery_id,
        at=at,
        ok=ok,
        code=code,
        detail=detail[:DETAIL_MAX] if detail else None,
    )
