"""The audit log as a hash chain: each entry holds the previous entry's hash and its own,
so an entry edited, removed or moved by raw SQL no longer fits (`verify_chain` names the
first that does not).

Entries are written with what they record, in the same transaction, by the SQL that
records it (claims, clicks, transitions, the executor); `link_pending` chains them after.
One chain per store, in one order, without a gap, across every process writing to it:
- SQLite has one writer at a time, so an entry's id is its place: the chainer links in
  id order whatever is committed;
- PostgreSQL commits in parallel, and an id taken early may commit late. Each entry keeps
  its writing transaction's id (`txid`, a server default), and the chainer links only
  entries of transactions older than every transaction still running
  (`pg_snapshot_xmin`), in (txid, id) order: nothing can later appear before a linked
  entry. Linking holds the head row's lock, so two chainers take turns.
Why a chainer and not a link per insert: a link made by the inserting transaction must
lock the head until it commits, which puts every write of every replica in one line (and
the group writer's batches, which lock operations first, would deadlock on it). The cost:
an entry is unlinked for the chainer's period (a second by default).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Select, bindparam, func, select, text, update

from kernel.canonical import canonical_json, sha256_hex
from kernel.timeutil import iso_utc
from store.schema.tables import AuditChainRow, AuditRow

GENESIS = "0" * 64
LINK_BATCH = 500
VERIFY_PAGE = 2_000


def entry_material(seq: int, row: Any) -> dict[str, Any]:
    """What an entry's hash covers: its place and everything it says. The evidence digest
    only where there is one (entries linked before it existed keep their hashes)."""
    material = {
        "seq": seq,
        "operation_id": row.operation_id,
        "at": iso_utc(row.at),
        "actor": row.actor,
        "event": row.event,
        "from_state": row.from_state,
        "to_state": row.to_state,
        "reason_code": row.reason_code,
    }
    if row.evidence is not None:
        material["evidence"] = row.evidence
    return material


def link_hash(prev_hash: str, material: dict[str, Any]) -> str:
    return sha256_hex(prev_hash + canonical_json(material))


def _unlinked(conn: Connection, limit: int) -> list[Any]:
    """The next entries to link, in chain order (read under the head's lock)."""
    columns = select(AuditRow.__table__).where(AuditRow.chain_seq.is_(None))
    # entries from before the chain (migration 0025) have no txid: they come first, by id
    rows = list(
        conn.execute(columns.where(AuditRow.txid.is_(None)).order_by(AuditRow.id).limit(limit))
    )
    if rows or conn.dialect.name != "postgresql":
        return rows
    xmin = conn.execute(text("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint"))
    settled = columns.where(AuditRow.txid < xmin.scalar_one())
    return list(conn.execute(settled.order_by(AuditRow.txid, AuditRow.id).limit(limit)))


def link_pending(conn: Connection, limit: int = LINK_BATCH) -> int:
    """Link up to `limit` entries to the chain, inside the caller's write transaction;
    how many it linked."""
    head = conn.execute(
        select(AuditChainRow.seq, AuditChainRow.head_hash)
        .where(AuditChainRow.id == 1)
        .with_for_update()
    ).one()
    rows = _unlinked(conn, limit)
    seq, last = head.seq, head.head_hash
    links = []
    for row in rows:
        seq += 1
        entry = link_hash(last, entry_material(seq, row))
        links.append({"row_id": row.id, "seq": seq, "prev": last, "entry": entry})
        last = entry
    if links:
        conn.execute(
            update(AuditRow)
            .where(AuditRow.id == bindparam("row_id"))
            .values(
                chain_seq=bindparam("seq"),
                prev_hash=bindparam("prev"),
                entry_hash=bindparam("entry"),
            ),
            links,
        )
        conn.execute(
            update(AuditChainRow).where(AuditChainRow.id == 1).values(seq=seq, head_hash=last)
        )
    return len(links)


def unlinked_exists(conn: Connection) -> bool:
    """Whether anything waits to be linked (a seek on the partial index)."""
    found = conn.execute(select(AuditRow.id).where(AuditRow.chain_seq.is_(None)).limit(1))
    return found.first() is not None


def unlinked_count(conn: Connection) -> int:
    found = select(func.count()).select_from(AuditRow).where(AuditRow.chain_seq.is_(None))
    return int(conn.execute(found).scalar_one())


@dataclass(frozen=True)
class ChainCheck:
    entries: int  # linked entries read
    head_seq: int
    problem: str | None  # the first entry that does not fit, in words; None: the chain holds

    @property
    def holds(self) -> bool:
        return self.problem is None


def check_chain(rows: Iterator[Any], head_seq: int, head_hash: str) -> ChainCheck:
    """Walk linked entries in chain_seq order; the first one that does not fit, named."""
    expected, last, count = 1, GENESIS, 0
    for row in rows:
        count += 1
        if row.chain_seq != expected:
            if row.chain_seq > expected:
                return ChainCheck(count, head_seq, f"entry {expected} is missing (removed)")
            return ChainCheck(count, head_seq, f"entry {row.chain_seq} appears twice")
        if row.prev_hash != last:
            problem = f"entry {expected} does not follow entry {expected - 1} (moved or replaced)"
            return ChainCheck(count, head_seq, problem)
        if link_hash(last, entry_material(expected, row)) != row.entry_hash:
            return ChainCheck(count, head_seq, f"entry {expected} was edited (id {row.id})")
        last, expected = row.entry_hash, expected + 1
    if expected - 1 != head_seq or last != head_hash:
        problem = f"the chain ends at entry {expected - 1}, its head says {head_seq}: removed"
        return ChainCheck(count, head_seq, problem)
    return ChainCheck(count, head_seq, None)


def linked_rows(
    conn: Connection, page: int = VERIFY_PAGE, query: Select[Any] | None = None
) -> Iterator[Any]:
    """Every linked entry in chain order, a page at a time (keyed by chain_seq); `query`
    reads more than the entry's own columns (an export joins its operation)."""
    after = 0
    while True:
        rows = list(
            conn.execute(
                (select(AuditRow.__table__) if query is None else query)
                .where(AuditRow.chain_seq > after)
                .order_by(AuditRow.chain_seq)
                .limit(page)
            )
        )
        yield from rows
        if len(rows) < page:
            return
        after = rows[-1].chain_seq


def read_head(conn: Connection) -> tuple[int, str]:
    """The chain's last linked entry: its place and its hash."""
    head = conn.execute(
        select(AuditChainRow.seq, AuditChainRow.head_hash).where(AuditChainRow.id == 1)
    ).one()
    return int(head.seq), str(head.head_hash)


def verify_stored(conn: Connection) -> ChainCheck:
    """The chain as the store holds it, checked (one read snapshot)."""
    seq, head_hash = read_head(conn)
    return check_chain(linked_rows(conn), seq, head_hash)
