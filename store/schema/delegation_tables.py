"""Delegations (store/delegation/ledger.py): an operator's approval right in one audience,
handed to another person for a bounded window. The click gate reads them in SQL
(store/claims/delegation_sql.py), so a revocation or an end applies to cards already out."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, String
from sqlalchemy.orm import Mapped, mapped_column

from store.schema.columns import Base, UTCDateTime


class DelegationRow(Base):
    __tablename__ = "delegations"

    id: Mapped[str] = mapped_column(String(26), primary_key=True)  # a ULID
    audience: Mapped[str] = mapped_column(String(64), nullable=False)
    delegator: Mapped[str] = mapped_column(String(128), nullable=False)  # whose right
    delegate: Mapped[str] = mapped_column(String(128), nullable=False)  # who may use it
    starts_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    ends_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    # the end as ISO-8601 UTC text, for the operation's `delegated` JSON the gate's SQL
    # builds (either backend writes it the same)
    ends_text: Mapped[str] = mapped_column(String(32), nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    created_by: Mapped[str] = mapped_column(String(160), nullable=False)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_by: Mapped[str | None] = mapped_column(String(160))
    # when its end was written to the audit log (the expiry sweep, once)
    ended_audited_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (
        # the gate: this person's delegations in this audience
        Index("ix_delegations_audience_delegate", "audience", "delegate", "ends_at"),
        Index("ix_delegations_delegator", "audience", "delegator"),
    )
