"""indexes that bound every hot read by its page, not by history (issue 34)

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-06 16:40:00

Each one serves a read that scanned a history table (the plans: tests/store/test_query_plans.py):
- operations (updated_at, id): the dashboard's change mark and recent activity;
- operations (source_proposer, created_at, id): a proposer's list, newest first, in order;
- partial, on operations: cards Lark refused (card_error IS NOT NULL), cards waiting
  (card_due_at IS NOT NULL AND card_error IS NULL), submissions still unknown, orders still
  working at a venue (an operator's "check again" looks at those two);
- partial, on outcomes: the rows whose status puts an operation before a person
  (unknown, unresolved);
- reservations (account, state, released_at) in place of (account, state): what an account
  holds now is two seeks, never its history;
- operations (exec_due_at) rebuilt partial, over the scheduled rows only: the executor's
  leases seek it as before, and an operator's "check again" can ask IS NOT NULL of it.

Only indexes: nothing is rewritten. SQLite builds each in the upgrade's one transaction;
PostgreSQL takes a plain CREATE INDEX (writes wait while it builds: seconds at 100k
operations; CONCURRENTLY cannot run inside the migration's transaction).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

# the predicates as store/schema/tables.py writes them at this revision, frozen here
CARD_REFUSED = "card_error IS NOT NULL"
CARD_WAITING = "card_due_at IS NOT NULL AND card_error IS NULL"
SUBMISSION_UNKNOWN = "execution_state = 'submission_unknown'"
SUBMITTED = "execution_state = 'submitted'"
NEEDS_PEOPLE = ("unknown", "unresolved")

# (table, name, columns, partial predicate or None)
INDEXES: tuple[tuple[str, str, tuple[str, ...], str | None], ...] = (
    ("operations", "ix_operations_updated_at_id", ("updated_at", "id"), None),
    (
        "operations",
        "ix_operations_source_proposer_created_at_id",
        ("source_proposer", "created_at", "id"),
        None,
    ),
    ("operations", "ix_operations_card_refused", ("created_at", "id"), CARD_REFUSED),
    ("operations", "ix_operations_card_waiting", ("updated_at",), CARD_WAITING),
    ("operations", "ix_operations_unknown_submissions", ("created_at", "id"), SUBMISSION_UNKNOWN),
    ("operations", "ix_operations_working_orders", ("id",), SUBMITTED),
    *(
        ("outcomes", f"ix_outcomes_{status}", ("operation_id", "id"), f"status = '{status}'")
        for status in NEEDS_PEOPLE
    ),
    (
        "reservations",
        "ix_reservations_account_state_released_at",
        ("account", "state", "released_at"),
        None,
    ),
)


def _where(predicate: str | None) -> dict[str, object]:
    if predicate is None:
        return {}
    return {"sqlite_where": sa.text(predicate), "postgresql_where": sa.text(predicate)}


SCHEDULED = "exec_due_at IS NOT NULL"


def upgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_index("ix_operations_exec_due_at")
        batch_op.create_index(
            "ix_operations_exec_due_at", ["exec_due_at"], unique=False, **_where(SCHEDULED)
        )
    for table, name, columns, predicate in INDEXES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.create_index(name, list(columns), unique=False, **_where(predicate))
    with op.batch_alter_table("reservations", schema=None) as batch_op:
        batch_op.drop_index("ix_reservations_account_state")


def downgrade() -> None:
    with op.batch_alter_table("reservations", schema=None) as batch_op:
        batch_op.create_index("ix_reservations_account_state", ["account", "state"], unique=False)
    for table, name, _columns, _predicate in reversed(INDEXES):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_index(name)
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_index("ix_operations_exec_due_at")
        batch_op.create_index("ix_operations_exec_due_at", ["exec_due_at"], unique=False)
