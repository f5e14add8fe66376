"""approval policy: N-of-M confirmations, the rule that applied, one count per operator

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05 06:00:00

An operation keeps what its approval policy asked when it was filed (how many distinct
operators must confirm, who may, the rule and its reason, the audience's policy digest)
and who has confirmed so far. A confirmation counts once per operator: a unique index over
the accepted confirm rows. Operations filed before this keep one confirmation from any of
their audience's operators, which is what they asked.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

COUNTED = "action = 'confirm' AND accepted"


def upgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("required_confirmations", sa.Integer(), nullable=False, server_default="1")
        )
        batch_op.add_column(sa.Column("approvers", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("approval", sa.Text(), nullable=True))
        batch_op.add_column(
            sa.Column("policy_digest", sa.String(length=64), nullable=False, server_default="")
        )
        batch_op.add_column(sa.Column("confirmed_by", sa.Text(), nullable=True))
    op.execute("UPDATE operations SET approvers = audience_operators")
    op.create_index(
        "uq_confirmations_counted",
        "confirmations",
        ["operation_id", "operator_open_id"],
        unique=True,
        sqlite_where=sa.text(COUNTED),
        postgresql_where=sa.text(COUNTED),
    )


def downgrade() -> None:
    op.drop_index("uq_confirmations_counted", table_name="confirmations")
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_column("confirmed_by")
        batch_op.drop_column("policy_digest")
        batch_op.drop_column("approval")
        batch_op.drop_column("approvers")
        batch_op.drop_column("required_confirmations")
