"""executor failure budget: consecutive failed passes per operation (issue 30, item 2)

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06 03:30:00

`operations.exec_failures` counts the executor's passes over an operation that raised, one
after another; any pass that ends normally sets it back to 0. It lives in the store so a
restart never resets it: after `[execution] max_failed_passes` the executor concludes the
operation (`unresolved` with the error's class) instead of looping in silence.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("exec_failures", sa.Integer(), server_default="0", nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_column("exec_failures")
