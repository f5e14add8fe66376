"""escalation: a copy of an undecided operation's card in another audience's chat

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-05 08:00:00

An audience may escalate to another: at the reminder, a copy of the card is sent to that
audience's chat (`escalation_message_id`), bound to the same operation and digest; clicks on
it count like the original's, and both cards are patched with every change (the copy shows
`escalation_card_version`).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("escalation_chat_id", sa.String(length=128), nullable=True))
        batch_op.add_column(
            sa.Column("escalation_message_id", sa.String(length=128), nullable=True)
        )
        batch_op.add_column(sa.Column("escalation_card_version", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_column("escalation_card_version")
        batch_op.drop_column("escalation_message_id")
        batch_op.drop_column("escalation_chat_id")
