"""a person's refused web posts on one operation: one row with a count (issue 30, item 5)

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-06 03:30:00

A signed-in person may post /ops/{id}/decide as often as a script can; each refused post
wrote a confirmations row (and an audit row), so a non-operator grew an operation's page to
megabytes. Now the refused web posts of one person on one operation are one row, whose
`refusals` counts them (its time, action, digest, form key and reason are the latest post's),
kept one by a partial unique index the write upserts against (store/claims/click_sql.py). Card
clicks keep a row each: Lark's client sends them, one per click, and recovery finds each by
its event id. Earlier duplicates are folded into their newest row, counted.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

REFUSED_WEB = "NOT accepted AND entry = 'web'"
INDEX = "uq_confirmations_refused_web"
# the rows of the same person's refused web posts on the same operation as `confirmations`
SAME = """
  FROM confirmations AS same
 WHERE same.operation_id = confirmations.operation_id
   AND same.operator_open_id = confirmations.operator_open_id
   AND NOT same.accepted AND same.entry = 'web'"""


def upgrade() -> None:
    with op.batch_alter_table("confirmations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("refusals", sa.Integer(), server_default="1", nullable=False))
    op.execute(f"UPDATE confirmations SET refusals = (SELECT count(*) {SAME}) WHERE {REFUSED_WEB}")
    op.execute(
        f"DELETE FROM confirmations WHERE {REFUSED_WEB} AND id < (SELECT max(same.id) {SAME})"
    )
    op.create_index(
        INDEX,
        "confirmations",
        ["operation_id", "operator_open_id"],
        unique=True,
        sqlite_where=sa.text(REFUSED_WEB),
        postgresql_where=sa.text(REFUSED_WEB),
    )


def downgrade() -> None:
    op.drop_index(INDEX, table_name="confirmations")
    with op.batch_alter_table("confirmations", schema=None) as batch_op:
        batch_op.drop_column("refusals")
