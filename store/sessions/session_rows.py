"""The dashboard's sign-in tables: sessions and sign-ins under way (store/sessions/web_sessions.py).

Apart from store/schema/tables.py, but on its `Base`, so the migrations' comparison with the models
sees them (store/authority/store.py imports this module, so every store user registers them).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from store.schema.tables import Base, UTCDateTime


class WebSessionRow(Base):
    """One signed-in browser. Keyed by the SHA-256 of its cookie, so the table never holds a
    token that would sign anyone in."""

    __tablename__ = "web_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    open_id: Mapped[str] = mapped_column(String(128), nullable=False)
    tenant_key: Mapped[str] = mapped_column(String(128), nullable=False)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    signed_in_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
    # for the forms of signed-in pages (sign-out now; decisions next): bound to this session
    csrf_token: Mapped[str] = mapped_column(String(64), nullable=False)
    revoked: Mapped[bool] = mapped_column(Boolean, nullable=False)

    __table_args__ = (Index("ix_web_sessions_signed_in_at", "signed_in_at"),)


class WebSignInRow(Base):
    """A sign-in sent to Lark and not back yet: its PKCE verifier, by the SHA-256 of its
    `state`; taken (deleted) once by the callback."""

    __tablename__ = "web_sign_ins"

    state_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    code_verifier: Mapped[str] = mapped_column(String(128), nullable=False)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, nullable=False)
