"""where a decision was made: the card in Lark, or the web

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05 10:00:00

Every click records its entry (`confirmations.entry`, 'lark' for every earlier row) and a
decided operation the entry of the decision (`operations.decision_entry`; earlier decisions
were all made on the card). Both are checked against store.vocabulary.Entry.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from store.vocabulary import allowed_sql

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# store.vocabulary.Entry as of this revision, frozen here
ENTRIES = ("lark", "web")


def upgrade() -> None:
    with op.batch_alter_table("confirmations", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("entry", sa.String(length=16), server_default="lark", nullable=False)
        )
        batch_op.create_check_constraint(
            op.f("ck_confirmations_entry"), allowed_sql("entry", ENTRIES)
        )
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("decision_entry", sa.String(length=16), nullable=True))
        batch_op.create_check_constraint(
            op.f("ck_operations_decision_entry"), allowed_sql("decision_entry", ENTRIES)
        )
    op.execute("UPDATE operations SET decision_entry = 'lark' WHERE decided_by IS NOT NULL")


def downgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_operations_decision_entry"), type_="check")
        batch_op.drop_column("decision_entry")
    with op.batch_alter_table("confirmations", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_confirmations_entry"), type_="check")
        batch_op.drop_column("entry")
