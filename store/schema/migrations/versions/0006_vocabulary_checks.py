"""one vocabulary the database enforces: CHECK constraints, a stage concludes once

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03 16:20:00
"""

from __future__ import annotations

from alembic import op

from store.vocabulary import allowed_sql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# The vocabularies of store.vocabulary as of this revision, frozen here: a migration must
# do the same thing tomorrow. A later value needs a later migration that widens these
# (tests/store/test_vocabulary.py writes every current value and fails until one does).
VOCABULARY: dict[str, dict[str, tuple[str, ...]]] = {
    "operations": {
        "state": (
            "prepared",
            "awaiting_confirmation",
            "claimed",
            "outcome_observed",
            "rejected",
            "cancelled",
            "expired",
            "superseded",
        ),
        "execution_state": (
            "queued",
            "preflight",
            "reserved",
            "dispatching",
            "submitted",
            "submission_unknown",
            "completed",
            "reconciled",
            "preflight_rejected",
            "reservation_refused",
        ),
    },
    "attempts": {"state": ("recorded", "dispatched", "unknown", "resolved")},
    "reservations": {"state": ("active", "released", "converted")},
    "outcomes": {"stage": ("initial", "reconciled")},
    "deliveries": {
        "stage": ("initial", "reconciled"),
        "state": ("pending", "delivered", "failed"),
        "channel": ("reply", "webhook"),
    },
    "inbox": {"status": ("received", "answered", "failed")},
    "card_deliveries": {"action": ("send", "patch", "callback", "none")},
}
ONE_CONCLUSION = "uq_deliveries_operation_id_channel_stage"


def upgrade() -> None:
    _refuse_duplicate_conclusions()
    for table, columns in VOCABULARY.items():
        # SQLite rebuilds the table (batch mode); PostgreSQL adds and validates in place.
        # Either way a row outside the vocabulary fails the upgrade and nothing is committed.
        with op.batch_alter_table(table, schema=None) as batch_op:
            for column, values in columns.items():
                batch_op.create_check_constraint(
                    op.f(f"ck_{table}_{column}"), allowed_sql(column, values)
                )
            if table == "deliveries":
                batch_op.create_unique_constraint(
                    op.f(ONE_CONCLUSION), ["operation_id", "channel", "stage"]
                )


def downgrade() -> None:
    for table, columns in reversed(VOCABULARY.items()):
        with op.batch_alter_table(table, schema=None) as batch_op:
            if table == "deliveries":
                batch_op.drop_constraint(op.f(ONE_CONCLUSION), type_="unique")
            for column in columns:
                batch_op.drop_constraint(op.f(f"ck_{table}_{column}"), type_="check")


def _refuse_duplicate_conclusions() -> None:
    """Conclusions were checked before insert until now: say which ones a race doubled."""
    doubled = (
        op.get_bind()
        .exec_driver_sql(
            "SELECT operation_id, channel, stage FROM deliveries "
            "GROUP BY operation_id, channel, stage HAVING count(*) > 1"
        )
        .all()
    )
    if doubled:
        raise RuntimeError(
            f"deliveries: {len(doubled)} stage(s) concluded more than once "
            f"(first: {tuple(doubled[0])}); keep the oldest row of each "
            "(and its delivery_attempts), delete the others, then upgrade again"
        )
