"""message drafts: a filing receipt in the ops chat, and drafts closed for changes

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05 15:00:00

Two vocabularies widen: `deliveries.channel` gains `ops_chat` (a draft's filing receipt,
posted only to its destination's internal ops chat, through the outbox so a crash cannot
lose it) and `operations.state` gains `changes_requested` (an operator asked the proposer
to rewrite the draft; it is closed, and a re-file is a new draft).
"""

from __future__ import annotations

from alembic import op

from store.vocabulary import allowed_sql

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

# the vocabularies before and after this revision, frozen here
STATES = (
    "prepared",
    "awaiting_confirmation",
    "claimed",
    "outcome_observed",
    "rejected",
    "cancelled",
    "expired",
    "superseded",
)
CHANNELS = ("reply", "webhook")
WIDENED = {
    ("operations", "state"): (STATES, (*STATES, "changes_requested")),
    ("deliveries", "channel"): (CHANNELS, (*CHANNELS, "ops_chat")),
}


def _replace_checks(new: bool) -> None:
    for (table, column), (before, after) in WIDENED.items():
        # SQLite rebuilds the table (batch mode); PostgreSQL swaps the constraint in place
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_constraint(op.f(f"ck_{table}_{column}"), type_="check")
            batch_op.create_check_constraint(
                op.f(f"ck_{table}_{column}"), allowed_sql(column, after if new else before)
            )


def upgrade() -> None:
    _replace_checks(new=True)


def downgrade() -> None:
    # a row in a value this revision added fails the downgrade, and nothing is committed
    _replace_checks(new=False)
