"""dashboard sign-in: sessions and sign-ins under way

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-12 09:00:00

Sign in with Lark on /ops: a server-side session per signed-in browser, keyed by the SHA-256
of its cookie, and the PKCE verifier of each sign-in sent to Lark, taken once by its callback
(store/sessions/session_rows.py).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from store.schema.tables import UTCDateTime

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "web_sessions",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("open_id", sa.String(128), nullable=False),
        sa.Column("tenant_key", sa.String(128), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("signed_in_at", UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", UTCDateTime(), nullable=False),
        sa.Column("csrf_token", sa.String(64), nullable=False),
        sa.Column("revoked", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_web_sessions")),
    )
    op.create_index("ix_web_sessions_signed_in_at", "web_sessions", ["signed_in_at"])
    op.create_table(
        "web_sign_ins",
        sa.Column("state_hash", sa.String(64), nullable=False),
        sa.Column("code_verifier", sa.String(128), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("state_hash", name=op.f("pk_web_sign_ins")),
    )


def downgrade() -> None:
    op.drop_table("web_sign_ins")
    op.drop_index("ix_web_sessions_signed_in_at", table_name="web_sessions")
    op.drop_table("web_sessions")
