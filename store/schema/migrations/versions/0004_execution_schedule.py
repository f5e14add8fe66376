"""execution schedule: when an operation's executor or reconciler is next due

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03 04:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema.tables

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("exec_due_at", store.schema.tables.UTCDateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(
            sa.Column("exec_tries", sa.Integer(), server_default="0", nullable=False)
        )
        batch_op.create_index("ix_operations_exec_due_at", ["exec_due_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_index("ix_operations_exec_due_at")
        batch_op.drop_column("exec_tries")
        batch_op.drop_column("exec_due_at")
