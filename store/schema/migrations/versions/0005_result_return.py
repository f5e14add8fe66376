"""result return: source routes and the deliveries outbox

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03 04:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema.tables

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("source_routes", sa.Text(), nullable=True))
    op.create_table(
        "deliveries",
        sa.Column("id", sa.String(length=26), nullable=False),
        sa.Column("operation_id", sa.String(length=26), nullable=False),
        sa.Column("channel", sa.String(length=16), nullable=False),
        sa.Column("stage", sa.String(length=16), nullable=False),
        sa.Column("outcome_digest", sa.String(length=64), nullable=False),
        sa.Column("reconciles_digest", sa.String(length=64), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("due_at", store.schema.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", store.schema.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("delivered_at", store.schema.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("result", sa.String(length=128), nullable=True),
        sa.Column("last_error", sa.String(length=300), nullable=True),
        sa.ForeignKeyConstraint(
            ["operation_id"], ["operations.id"], name=op.f("fk_deliveries_operation_id_operations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deliveries")),
        sa.UniqueConstraint(
            "operation_id",
            "channel",
            "outcome_digest",
            name=op.f("uq_deliveries_operation_id_channel_outcome_digest"),
        ),
    )
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.create_index("ix_deliveries_due_at", ["due_at"], unique=False)
        batch_op.create_index("ix_deliveries_state", ["state"], unique=False)
    op.create_table(
        "delivery_attempts",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("delivery_id", sa.String(length=26), nullable=False),
        sa.Column("at", store.schema.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("code", sa.Integer(), nullable=True),
        sa.Column("detail", sa.String(length=300), nullable=True),
        sa.ForeignKeyConstraint(
            ["delivery_id"],
            ["deliveries.id"],
            name=op.f("fk_delivery_attempts_delivery_id_deliveries"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_delivery_attempts")),
    )
    with op.batch_alter_table("delivery_attempts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_delivery_attempts_delivery_id"), ["delivery_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("delivery_attempts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_delivery_attempts_delivery_id"))
    op.drop_table("delivery_attempts")
    with op.batch_alter_table("deliveries", schema=None) as batch_op:
        batch_op.drop_index("ix_deliveries_state")
        batch_op.drop_index("ix_deliveries_due_at")
    op.drop_table("deliveries")
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_column("source_routes")
