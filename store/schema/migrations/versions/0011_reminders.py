"""reminders before expiry: when one is due, and when it went

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05 07:30:00

An audience may ask for one reminder before an undecided operation expires. `remind_at` is
when it is due (leased forward while a worker sends it, like card delivery); `reminded_at`
says it went, so it goes once.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema.tables

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("remind_at", store.schema.tables.UTCDateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(
            sa.Column("reminded_at", store.schema.tables.UTCDateTime(timezone=True), nullable=True)
        )
    op.create_index("ix_operations_remind_at", "operations", ["remind_at"])


def downgrade() -> None:
    op.drop_index("ix_operations_remind_at", table_name="operations")
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_column("reminded_at")
        batch_op.drop_column("remind_at")
