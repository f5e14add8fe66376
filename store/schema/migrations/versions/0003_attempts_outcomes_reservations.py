"""attempts, outcomes, reservations

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03 01:41:08.635226
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema.tables

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("account", sa.String(length=200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("account", name=op.f("pk_accounts")),
    )
    op.create_table(
        "attempts",
        sa.Column("id", sa.String(length=26), nullable=False),
        sa.Column("operation_id", sa.String(length=26), nullable=False),
        sa.Column("client_id", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("recorded_at", store.schema.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("dispatched_at", store.schema.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("resolved_at", store.schema.tables.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.String(length=300), nullable=True),
        sa.ForeignKeyConstraint(
            ["operation_id"], ["operations.id"], name=op.f("fk_attempts_operation_id_operations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attempts")),
        sa.UniqueConstraint("client_id", name=op.f("uq_attempts_client_id")),
        sa.UniqueConstraint("operation_id", name=op.f("uq_attempts_operation_id")),
    )
    op.create_table(
        "outcomes",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("operation_id", sa.String(length=26), nullable=False),
        sa.Column("stage", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("outcome_digest", sa.String(length=64), nullable=False),
        sa.Column("reconciles_digest", sa.String(length=64), nullable=True),
        sa.Column("observed_at", store.schema.tables.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["operation_id"], ["operations.id"], name=op.f("fk_outcomes_operation_id_operations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outcomes")),
        sa.UniqueConstraint("outcome_digest", name=op.f("uq_outcomes_outcome_digest")),
    )
    with op.batch_alter_table("outcomes", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_outcomes_operation_id"), ["operation_id"], unique=False
        )

    op.create_table(
        "reservations",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("operation_id", sa.String(length=26), nullable=False),
        sa.Column("account", sa.String(length=200), nullable=False),
        sa.Column("amount", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("created_at", store.schema.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("released_at", store.schema.tables.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["account"], ["accounts.account"], name=op.f("fk_reservations_account_accounts")
        ),
        sa.ForeignKeyConstraint(
            ["operation_id"],
            ["operations.id"],
            name=op.f("fk_reservations_operation_id_operations"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reservations")),
        sa.UniqueConstraint("operation_id", name=op.f("uq_reservations_operation_id")),
    )
    with op.batch_alter_table("reservations", schema=None) as batch_op:
        batch_op.create_index("ix_reservations_account_state", ["account", "state"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("reservations", schema=None) as batch_op:
        batch_op.drop_index("ix_reservations_account_state")

    op.drop_table("reservations")
    with op.batch_alter_table("outcomes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_outcomes_operation_id"))

    op.drop_table("outcomes")
    op.drop_table("attempts")
    op.drop_table("accounts")
