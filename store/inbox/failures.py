"""An ingress entry that will never be answered, recorded once as failed with its reason.

For what no try can fix: an event of a shape Lark never sends (it may not even be storable as
given, so the reason is kept, not the event), or a reply Lark refused for good. A received
entry becomes failed; an unknown key is inserted failed; an entry already answered or failed
is left as it is. One write; the unique (kind, key) makes replicas agree.
"""

from __future__ import annotations

from sqlalchemy import Connection, update

from kernel.canonical import record_json
from store.authority.store import Store
from store.backend.once import insert_once
from store.inbox.inbox import FAILED, RECEIVED, stored_key
from store.schema.tables import InboxRow

MAX_REASON_CHARS = 500


async def record_failure(store: Store, kind: str, key: str, reason: str) -> bool:
    """Record `key` of `kind` as failed for `reason`; False if it was settled already (so
    the caller says so once, not at every re-push)."""
    key, now = stored_key(key), store.clock()
    answer = record_json({"failed": reason[:MAX_REASON_CHARS]})
    failed = (
        update(InboxRow)
        .where(InboxRow.kind == kind, InboxRow.key == key, InboxRow.status == RECEIVED)
        .values(status=FAILED, answer=answer, answered_at=now)
    )

    def write(conn: Connection) -> bool:
        if conn.execute(failed).rowcount == 1:
            return True
        inserted = conn.execute(
            insert_once(conn.dialect.name, InboxRow)
            .values(
                kind=kind,
                key=key,
                received_at=now,
                payload=record_json({"refused": reason[:MAX_REASON_CHARS]}),
                status=FAILED,
                tries=0,
                answer=answer,
                answered_at=now,
            )
            .returning(InboxRow.id)
        ).first()
        return inserted is not None

    return await store.transact(write)
