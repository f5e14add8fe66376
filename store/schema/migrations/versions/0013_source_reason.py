"""why an operation is proposed, in the proposer's words

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05 09:00:00

A proposer may say why it proposes (`source.reason`: one line of plain text); the card shows
it under the header, and it is bound into the confirm digest with the rest of the source.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("source_reason", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_column("source_reason")
