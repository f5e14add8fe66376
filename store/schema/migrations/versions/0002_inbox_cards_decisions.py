"""inbox, card delivery, decisions

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-03 01:07:27.480014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema.tables

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "inbox",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("key", sa.String(length=128), nullable=False),
        sa.Column("received_at", store.schema.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("answered_at", store.schema.tables.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inbox")),
        sa.UniqueConstraint("kind", "key", name=op.f("uq_inbox_kind_key")),
    )
    with op.batch_alter_table("inbox", schema=None) as batch_op:
        batch_op.create_index("ix_inbox_kind_status", ["kind", "status"], unique=False)

    op.create_table(
        "card_deliveries",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("operation_id", sa.String(length=26), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("at", store.schema.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("code", sa.Integer(), nullable=True),
        sa.Column("detail", sa.String(length=300), nullable=True),
        sa.ForeignKeyConstraint(
            ["operation_id"],
            ["operations.id"],
            name=op.f("fk_card_deliveries_operation_id_operations"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_card_deliveries")),
    )
    with op.batch_alter_table("card_deliveries", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_card_deliveries_operation_id"), ["operation_id"], unique=False
        )

    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("decided_by", sa.String(length=128), nullable=True))
        batch_op.add_column(
            sa.Column("decided_at", store.schema.tables.UTCDateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(sa.Column("card_version", sa.Integer(), nullable=True))
        batch_op.add_column(
            sa.Column("card_due_at", store.schema.tables.UTCDateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(
            sa.Column("card_attempts", sa.Integer(), server_default="0", nullable=False)
        )
        batch_op.add_column(sa.Column("card_error", sa.String(length=300), nullable=True))
        batch_op.create_index("ix_operations_card_due_at", ["card_due_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_index("ix_operations_card_due_at")
        batch_op.drop_column("card_error")
        batch_op.drop_column("card_attempts")
        batch_op.drop_column("card_due_at")
        batch_op.drop_column("card_version")
        batch_op.drop_column("decided_at")
        batch_op.drop_column("decided_by")

    with op.batch_alter_table("card_deliveries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_card_deliveries_operation_id"))

    op.drop_table("card_deliveries")
    with op.batch_alter_table("inbox", schema=None) as batch_op:
        batch_op.drop_index("ix_inbox_kind_status")

    op.drop_table("inbox")
