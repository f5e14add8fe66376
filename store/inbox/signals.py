"""Inbound signals: texts a counterparty wrote in a message destination's chat.

The text listener records each one once (by Lark's message id) and stays silent there; a
draft may name the signal it answers (`payload.signal_id`), checked when it is filed. The
text is kept bounded: it is evidence of what was asked, shown beside the draft that answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from store.authority.store import Store
from store.backend.once import insert_once
from store.schema.tables import SignalRow

TEXT_KEPT = 2000


@dataclass(frozen=True)
class Signal:
    message_id: str
    destination: str
    chat_id: str
    sender_open_id: str
    text: str
    received_at: datetime

    @classmethod
    def from_row(cls, row: Any) -> Signal:
        return cls(
            row.message_id,
            row.destination,
            row.chat_id,
            row.sender_open_id,
            row.text,
            row.received_at,
        )


async def record_signal(store: Store, signal: Signal) -> bool:
    """Keep `signal` once; False if its message was recorded before (a re-push)."""

    def write(conn: Connection) -> bool:
        inserted = conn.execute(
            insert_once(conn.dialect.name, SignalRow)
            .values(
                message_id=signal.message_id,
                destination=signal.destination,
                chat_id=signal.chat_id,
                sender_open_id=signal.sender_open_id,
                text=signal.text[:TEXT_KEPT],
                received_at=signal.received_at,
            )
            .returning(SignalRow.message_id)
        )
        return inserted.first() is not None

    return await store.transact(write)


async def signal_of(store: Store, message_id: str) -> Signal | None:
    async with store.read() as conn:
        row = (
            await conn.execute(
                select(SignalRow.__table__).where(SignalRow.message_id == message_id)
            )
        ).one_or_none()
    return None if row is None else Signal.from_row(row)
