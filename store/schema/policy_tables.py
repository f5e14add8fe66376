"""The effective policy's versions (store/policy/ledger.py): each one the bot started under
that differed from the one before, with its document, what changed, and each audience's
card digest (to say which version an operation was filed under)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from store.schema.columns import Base, UTCDateTime


class PolicyVersionRow(Base):
    __tablename__ = "policy_versions"

    # assigned as the last one's + 1: two processes recording at once collide on the key,
    # and the one that lost reads again (no two versions share a number, none is skipped)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    digest: Mapped[str] = mapped_column(String(64), nullable=False)
    at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    actor: Mapped[str] = mapped_column(String(160), nullable=False)
    document: Mapped[str] = mapped_column(Text, nullable=False)  # canonical JSON
    # JSON list of {"audience": name | null, "text": line}
    changes: Mapped[str] = mapped_column(Text, nullable=False)
    # when its lines were posted into the audiences' chats (NULL: not yet, or nothing to say)
    announced_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class PolicyAudienceRow(Base):
    __tablename__ = "policy_audiences"

    seq: Mapped[int] = mapped_column(
        Integer, ForeignKey("policy_versions.seq", ondelete="CASCADE"), primary_key=True
    )
    audience: Mapped[str] = mapped_column(String(64), primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), nullable=False)

    # an operation's version: the first one with its audience's digest (store/policy/ledger.py)
    __table_args__ = (Index("ix_policy_audiences_digest", "audience", "digest", "seq"),)
