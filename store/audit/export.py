"""The audit chain as a file an auditor keeps: `countersign audit export` writes linked
entries in chain order (JSON lines or CSV), and `countersign audit verify FILE` checks one
without the store.

An export is a contiguous run of the chain, so every link in it can be checked:
- `--since`/`--until` choose where the run starts and ends: from the first entry at or after
  `since` to the last one before the first entry at or after `until` (chain order is commit
  order, which a clock can disagree with by a moment: a window never leaves a hole);
- `--audience` keeps the run whole but redacts the other audiences' entries to their place
  and hashes (`redacted: true`), so the links still prove nothing was removed or moved;
  the house's own entries (policy versions) are every audience's.
The first entry's `prev_hash` is taken as given: a witnessed head (`verify --witness`) or a
full verify of the store anchors it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from store.audit.chain import GENESIS, VERIFY_PAGE, entry_material, link_hash, linked_rows
from store.audit.witness import Witness
from store.delegation.ledger import SUBJECT_PREFIX, delegation_subject
from store.policy.ledger import is_policy_subject
from store.schema.delegation_tables import DelegationRow
from store.schema.tables import AuditRow, OperationRow

MATERIAL_FIELDS = (
    "seq",
    "operation_id",
    "at",
    "actor",
    "event",
    "from_state",
    "to_state",
    "reason_code",
    "evidence",
)
NULLABLE_FIELDS = frozenset({"from_state", "to_state", "reason_code", "evidence"})
# What a line of an export holds, in this order (a CSV file's header row).
EXPORT_FIELDS = (*MATERIAL_FIELDS, "audience", "prev_hash", "entry_hash", "redacted")


@dataclass(frozen=True)
class ExportWindow:
    """Which run of the chain an export holds, and for whom."""

    since: datetime | None = None
    until: datetime | None = None
    audience: str | None = None


def export_record(row: Any, audience: str | None, redact: bool) -> dict[str, Any]:
    """One line of an export: an entry as its hash covers it, with its links."""
    links = {"prev_hash": row.prev_hash, "entry_hash": row.entry_hash}
    if redact:  # another audience's entry: its place and its hashes only
        blank = dict.fromkeys(MATERIAL_FIELDS[1:])
        return {"seq": row.chain_seq, **blank, "audience": None, **links, "redacted": True}
    material = {**dict.fromkeys(MATERIAL_FIELDS), **entry_material(row.chain_seq, row)}
    return {**material, "audience": audience, **links, "redacted": False}


def exported(
    conn: Connection, window: ExportWindow, page: int = VERIFY_PAGE
) -> Iterator[dict[str, Any]]:
    """The window's run of the chain as export records, streamed (one read snapshot: the
    caller's connection). Reads the chain from its start: an export is rare, an index on
    `at` would cost every audited write."""
    started = window.since is None
    audiences: dict[str, str] = {}  # of the operations of entries up to `covered`
    covered = 0
    for row in linked_rows(conn, page):
        if window.until is not None and row.at >= window.until:
            return
        if not started:
            if row.at < window.since:
                continue
            started = True
        if row.chain_seq > covered:  # seqs have no gaps: a page's worth from this one
            audiences, covered = _audiences(conn, row.chain_seq, page), row.chain_seq + page - 1
        audience = audiences.get(row.operation_id)
        # an entry of the whole house (a policy version) is every audience's to read
        redact = (
            window.audience is not None
            and audience != window.audience
            and not is_policy_subject(row.operation_id)
        )
        yield export_record(row, audience, redact)


def _audiences(conn: Connection, first_seq: int, page: int) -> dict[str, str]:
    """The audiences of the operations of `page` entries from `first_seq` on (by primary
    key): one read per page instead of one per entry."""
    ahead = (
        select(AuditRow.operation_id)
        .where(AuditRow.chain_seq.between(first_seq, first_seq + page - 1))
        .scalar_subquery()
    )
    found = conn.execute(
        select(OperationRow.id, OperationRow.audience_name).where(OperationRow.id.in_(ahead))
    )
    audiences = {operation_id: audience for operation_id, audience in found}
    # a delegation's entries are its audience's
    delegated = conn.execute(
        select(AuditRow.operation_id).where(
            AuditRow.chain_seq.between(first_seq, first_seq + page - 1),
            AuditRow.operation_id.startswith(SUBJECT_PREFIX),
        )
    ).scalars()
    ids = {subject.removeprefix(SUBJECT_PREFIX) for subject in delegated}
    if ids:
        rows = conn.execute(
            select(DelegationRow.id, DelegationRow.audience).where(DelegationRow.id.in_(ids))
        )
        audiences.update({delegation_subject(id_): audience for id_, audience in rows})
    return audiences


@dataclass(frozen=True)
class ExportCheck:
    entries: int
    redacted: int
    first_seq: int | None
    last_seq: int | None
    last_hash: str | None
    problem: str | None  # the first entry that does not fit, in words; None: the file holds
    witnessed: tuple[Witness, ...] = ()  # the witnessed heads the file's entries matched

    @property
    def holds(self) -> bool:
        return self.problem is None


def record_material(record: dict[str, Any]) -> dict[str, Any]:
    """What the entry's hash covers, from a line of an export (CSV's empty cells are None)."""
    material = {name: record.get(name) for name in MATERIAL_FIELDS}
    for name in NULLABLE_FIELDS:
        if material[name] == "":
            material[name] = None
    material["seq"] = int(record["seq"])
    if material["evidence"] is None:  # as `entry_material`: only where there is one
        del material["evidence"]
    return material


def check_export(
    records: Iterable[dict[str, Any]], witnesses: Mapping[int, Sequence[Witness]] | None = None
) -> ExportCheck:
    """Recompute an export's entries and links, and compare the entries a head was witnessed
    at with what the witness holds; the first that does not fit, named."""
    count = redacted = 0
    first: int | None = None
    seq: int | None = None
    last_hash: str | None = None
    matched: list[Witness] = []

    def verdict(problem: str | None) -> ExportCheck:
        return ExportCheck(count, redacted, first, seq, last_hash, problem, tuple(matched))

    for record in records:
        count += 1
        at = int(record["seq"])
        if seq is not None and at != seq + 1:
            if at > seq + 1:
                return verdict(f"entry {seq + 1} is missing here (removed or moved)")
            return verdict(f"entry {at} comes after entry {seq} (moved)")
        if first is None:
            first = at
            if at == 1 and record["prev_hash"] != GENESIS:
                return verdict("entry 1 does not start the chain (replaced)")
        elif record["prev_hash"] != last_hash:
            return verdict(f"entry {at} does not follow entry {at - 1} (moved or replaced)")
        if str(record.get("redacted", "")).lower() in ("true", "1"):
            redacted += 1
        elif link_hash(record["prev_hash"], record_material(record)) != record["entry_hash"]:
            return verdict(f"entry {at} was edited")
        for witness in (witnesses or {}).get(at, ()):
            if witness.entry_hash != record["entry_hash"]:
                return verdict(
                    f"entry {at} is not the head witnessed in {witness.chat_id} at "
                    f"{witness.posted_at} (message {witness.message_id}): the chain was rewritten"
                )
            matched.append(witness)
        seq, last_hash = at, record["entry_hash"]
    return verdict(None)
