"""time-boxed auto-send: when a draft sends itself, and decisions made by that clock

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05 16:00:00

A message draft may ask to be sent by itself `auto_send_after_s` after filing if nobody has
decided by then (`operations.auto_send_at`, swept like expiry). Such a decision is recorded
with entry `auto` (`confirmations.entry`, `operations.decision_entry`), by operator
`auto-ttl`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema.tables
from store.vocabulary import allowed_sql

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

# store.vocabulary.Entry before and after this revision, frozen here
ENTRIES = ("lark", "web")
WIDER = (*ENTRIES, "auto")
CHECKED = (("confirmations", "entry"), ("operations", "decision_entry"))


def _entries(values: tuple[str, ...]) -> None:
    for table, column in CHECKED:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_constraint(op.f(f"ck_{table}_{column}"), type_="check")
            batch_op.create_check_constraint(
                op.f(f"ck_{table}_{column}"), allowed_sql(column, values)
            )


def upgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("auto_send_at", store.schema.tables.UTCDateTime(timezone=True), nullable=True)
        )
    op.create_index("ix_operations_auto_send_at", "operations", ["auto_send_at"])
    _entries(WIDER)


def downgrade() -> None:
    # a decision made by the clock fails the downgrade, and nothing is committed
    _entries(ENTRIES)
    op.drop_index("ix_operations_auto_send_at", table_name="operations")
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_column("auto_send_at")
