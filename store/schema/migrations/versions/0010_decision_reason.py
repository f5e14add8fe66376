"""a reject's reason: what the operator wrote, kept with the decision

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05 07:00:00

The operator may write why they rejected (bounded and cleaned at the click); it is shown on
the card and the dashboard and returned to the proposer with the conclusion.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("decision_reason", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_column("decision_reason")
