"""delegations (issue 35): an operator's approval right handed to another person for a window

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-07 02:30:00

- delegations: whose right, to whom, in which audience, from when to when, who granted and
  who revoked it, and when its end was audited;
- confirmations.on_behalf_of, delegation_id: a confirmation given with a delegated right;
- uq_confirmations_seat: one counted confirmation per right (its holder's own, or used by
  a delegate), besides one per person (uq_confirmations_counted);
- operations.delegated: who confirmed for whom, until when (JSON), for the card.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

COUNTED = "action = 'confirm' AND accepted"


def upgrade() -> None:
    op.create_table(
        "delegations",
        sa.Column("id", sa.String(length=26), nullable=False),
        sa.Column("audience", sa.String(length=64), nullable=False),
        sa.Column("delegator", sa.String(length=128), nullable=False),
        sa.Column("delegate", sa.String(length=128), nullable=False),
        sa.Column("starts_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ends_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ends_text", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=160), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_by", sa.String(length=160), nullable=True),
        sa.Column("ended_audited_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_delegations")),
    )
    op.create_index(
        "ix_delegations_audience_delegate", "delegations", ["audience", "delegate", "ends_at"]
    )
    op.create_index("ix_delegations_delegator", "delegations", ["audience", "delegator"])
    op.add_column("confirmations", sa.Column("on_behalf_of", sa.String(length=128)))
    op.add_column("confirmations", sa.Column("delegation_id", sa.String(length=26)))
    op.create_index(
        "uq_confirmations_seat",
        "confirmations",
        ["operation_id", sa.text("coalesce(on_behalf_of, operator_open_id)")],
        unique=True,
        sqlite_where=sa.text(COUNTED),
        postgresql_where=sa.text(COUNTED),
    )
    op.add_column("operations", sa.Column("delegated", sa.Text()))


def downgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_column("delegated")
    op.drop_index("uq_confirmations_seat", table_name="confirmations")
    with op.batch_alter_table("confirmations", schema=None) as batch_op:
        batch_op.drop_column("delegation_id")
        batch_op.drop_column("on_behalf_of")
    op.drop_index("ix_delegations_delegator", table_name="delegations")
    op.drop_index("ix_delegations_audience_delegate", table_name="delegations")
    op.drop_table("delegations")
