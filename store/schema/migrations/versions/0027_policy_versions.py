"""the effective policy's history (issue 35): each version the bot started under that differed

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-07 02:20:00

- policy_versions: a version's number (assigned last + 1, so two processes recording at once
  collide on the key), its digest, when and by whom, the document, what changed in words,
  and when that was announced in the audiences' chats;
- policy_audiences: each audience's card digest in a version, to find the version an
  operation was filed under (its `policy_digest`) without reading documents.
Each version is also an audit entry (`policy_changed`, its evidence the document's digest).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "policy_versions",
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=160), nullable=False),
        sa.Column("document", sa.Text(), nullable=False),
        sa.Column("changes", sa.Text(), nullable=False),
        sa.Column("announced_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_policy_versions")),
    )
    op.create_table(
        "policy_audiences",
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("audience", sa.String(length=64), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["seq"],
            ["policy_versions.seq"],
            name=op.f("fk_policy_audiences_seq_policy_versions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("seq", "audience", name=op.f("pk_policy_audiences")),
    )
    op.create_index("ix_policy_audiences_digest", "policy_audiences", ["audience", "digest", "seq"])


def downgrade() -> None:
    op.drop_index("ix_policy_audiences_digest", table_name="policy_audiences")
    op.drop_table("policy_audiences")
    op.drop_table("policy_versions")
