"""the newest outcome of an operation is one seek: outcomes (operation_id, id)

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-06 19:40:00

"Newest outcome" (the row with the highest id of its operation) is asked for every operation
a filtered dashboard page looks at, and for every member of the attention groups. On
PostgreSQL an index on operation_id alone finds an operation's outcomes in heap order, so each
ask sorted them; (operation_id, id) hands the newest first. It replaces ix_outcomes_operation_id
(its leading column still serves the foreign key). On SQLite the old index already ended in
the rowid; the new one is the same shape, named for what it holds.
"""

from __future__ import annotations

from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("outcomes", schema=None) as batch_op:
        batch_op.create_index("ix_outcomes_operation_id_id", ["operation_id", "id"], unique=False)
        batch_op.drop_index("ix_outcomes_operation_id")


def downgrade() -> None:
    with op.batch_alter_table("outcomes", schema=None) as batch_op:
        batch_op.create_index("ix_outcomes_operation_id", ["operation_id"], unique=False)
        batch_op.drop_index("ix_outcomes_operation_id_id")
