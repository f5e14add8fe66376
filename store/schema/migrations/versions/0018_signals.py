"""inbound signals: what a counterparty wrote in a destination's chat

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05 17:00:00

A text in a message destination's chat (the bot stays silent there) is recorded as an inbound
signal, once per Lark message id, so a draft can name the signal it answers (`signal_id`),
and the dashboard can show inbound -> draft -> sent (store/inbox/signals.py).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema.tables

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "signals",
        sa.Column("message_id", sa.String(128), nullable=False),
        sa.Column("destination", sa.String(64), nullable=False),
        sa.Column("chat_id", sa.String(128), nullable=False),
        sa.Column("sender_open_id", sa.String(128), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("received_at", store.schema.tables.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("message_id", name=op.f("pk_signals")),
    )
    op.create_index("ix_signals_destination_received_at", "signals", ["destination", "received_at"])


def downgrade() -> None:
    op.drop_index("ix_signals_destination_received_at", table_name="signals")
    op.drop_table("signals")
