"""The audit log's tables: its entries (with their links in the hash chain) and the
chain's head. Apart from store/schema/tables.py (which re-exports them) to keep each file
readable; the chain is store/audit/chain.py's."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from store.schema.columns import Base, BigId, UTCDateTime

UNCHAINED = "chain_seq IS NULL"
# a superseded draft's entry names the draft that replaced it (its evidence): a retried filing
# reads back what it superseded through these entries alone (store/authority/filing.py)
SUPERSEDED_ENTRY = "event = 'superseded'"


class AuditRow(Base):
    __tablename__ = "audit"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    operation_id: Mapped[str] = mapped_column(String(64), nullable=False, index=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    actor: Mapped[str] = mapped_column(String(160), nullable=False)
    event: Mapped[str] = mapped_column(String(32), nullable=False)
    from_state: Mapped[str | None] = mapped_column(String(32))
    to_state: Mapped[str | None] = mapped_column(String(32))
    reason_code: Mapped[str | None] = mapped_column(String(64))
    # a decision's or refusal's: the SHA-256 of the verified click or web post (migration 0026);
    # a supersede's: the id of the operation that superseded it
    evidence: Mapped[str | None] = mapped_column(String(64))
    # The hash chain (store/audit/chain.py, migration 0025): the writing transaction's id on
    # PostgreSQL (its server default), then the chainer's link once every transaction older
    # than it has ended: its place in the chain, the previous entry's hash and its own.
    txid: Mapped[int | None] = mapped_column(BigInteger)
    chain_seq: Mapped[int | None] = mapped_column(BigInteger, unique=True)
    prev_hash: Mapped[str | None] = mapped_column(String(64))
    entry_hash: Mapped[str | None] = mapped_column(String(64))

    __table_args__ = (
        Index(
            "ix_audit_unchained",
            "txid",
            "id",
            sqlite_where=text(UNCHAINED),
            postgresql_where=text(UNCHAINED),
        ),
        Index(
            "ix_audit_superseded_by",
            "evidence",
            sqlite_where=text(SUPERSEDED_ENTRY),
            postgresql_where=text(SUPERSEDED_ENTRY),
        ),
    )


class AuditChainRow(Base):
    """The chain's head: one row, locked by the chainer while it links (one at a time)."""

    __tablename__ = "audit_chain"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger, nullable=False)
    head_hash: Mapped[str] = mapped_column(String(64), nullable=False)
