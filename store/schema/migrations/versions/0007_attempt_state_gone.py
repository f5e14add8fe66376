"""attempts.state goes: where the attempt stands is operations.execution_state

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from store.vocabulary import allowed_sql

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# attempts.state as of 0006, frozen here: what a downgrade restores
ATTEMPT_STATES = ("recorded", "dispatched", "unknown", "resolved")
CHECK = "ck_attempts_state"

# The copy, rebuilt from what 0007 keeps: an attempt never dispatched was only recorded;
# one in flight is dispatched; an unknown (or an unknown the venue could no longer settle,
# which keeps its last_error) is unknown; anything the venue answered is resolved.
RESTORED_STATE = """
UPDATE attempts SET state = CASE
    WHEN dispatched_at IS NULL THEN 'recorded'
    ELSE (
        SELECT CASE
            WHEN operations.execution_state = 'dispatching' THEN 'dispatched'
            WHEN operations.execution_state = 'submission_unknown' THEN 'unknown'
            WHEN attempts.last_error IS NOT NULL THEN 'unknown'
            ELSE 'resolved'
        END
        FROM operations WHERE operations.id = attempts.operation_id
    )
END
"""


def upgrade() -> None:
    # SQLite rebuilds the table (batch mode); PostgreSQL drops in place.
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_constraint(op.f(CHECK), type_="check")
        batch_op.drop_column("state")


def downgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("state", sa.String(length=32), nullable=True))
    op.execute(RESTORED_STATE)
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.alter_column("state", existing_type=sa.String(length=32), nullable=False)
        batch_op.create_check_constraint(op.f(CHECK), allowed_sql("state", ATTEMPT_STATES))
