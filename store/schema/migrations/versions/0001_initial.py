"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-12-03 00:34:13.037855
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema.tables

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("operation_id", sa.String(length=64), nullable=False),
        sa.Column("at", store.schema.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=160), nullable=False),
        sa.Column("event", sa.String(length=32), nullable=False),
        sa.Column("from_state", sa.String(length=32), nullable=True),
        sa.Column("to_state", sa.String(length=32), nullable=True),
        sa.Column("reason_code", sa.String(length=64), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit")),
    )
    with op.batch_alter_table("audit", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_audit_operation_id"), ["operation_id"], unique=False)

    op.create_table(
        "confirmations",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("operation_id", sa.String(length=64), nullable=False),
        sa.Column("at", store.schema.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("operator_open_id", sa.String(length=128), nullable=False),
        sa.Column("digest", sa.String(length=128), nullable=False),
        sa.Column("chat_id", sa.String(length=128), nullable=True),
        sa.Column("message_id", sa.String(length=128), nullable=True),
        sa.Column("event_id", sa.String(length=128), nullable=True),
        sa.Column("accepted", sa.Boolean(), nullable=False),
        sa.Column("reason_code", sa.String(length=64), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_confirmations")),
    )
    with op.batch_alter_table("confirmations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_confirmations_operation_id"), ["operation_id"], unique=False
        )

    op.create_table(
        "operations",
        sa.Column("id", sa.String(length=26), nullable=False),
        sa.Column("created_at", store.schema.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", store.schema.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("executor_name", sa.String(length=64), nullable=False),
        sa.Column("executor_revision", sa.String(length=32), nullable=False),
        sa.Column("simulated", sa.Boolean(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("payload_digest", sa.String(length=64), nullable=False),
        sa.Column("projection", sa.Text(), nullable=False),
        sa.Column("projection_digest", sa.String(length=64), nullable=False),
        sa.Column("audience_name", sa.String(length=64), nullable=False),
        sa.Column("audience_chat_id", sa.String(length=128), nullable=False),
        sa.Column("audience_operators", sa.Text(), nullable=False),
        sa.Column("allow_self_approval", sa.Boolean(), nullable=False),
        sa.Column("target_ref", sa.String(length=200), nullable=False),
        sa.Column("expires_at", store.schema.tables.UTCDateTime(timezone=True), nullable=False),
        sa.Column("source_proposer", sa.String(length=64), nullable=False),
        sa.Column("source_request_id", sa.String(length=128), nullable=False),
        sa.Column("source_requester_open_id", sa.String(length=128), nullable=True),
        sa.Column("source_context", sa.Text(), nullable=False),
        sa.Column("request_content", sa.Text(), nullable=False),
        sa.Column("confirm_digest", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("card_message_id", sa.String(length=128), nullable=True),
        sa.Column("execution_state", sa.String(length=32), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_operations")),
        sa.UniqueConstraint(
            "source_proposer",
            "source_request_id",
            name=op.f("uq_operations_source_proposer_source_request_id"),
        ),
    )
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.create_index("ix_operations_created_at_id", ["created_at", "id"], unique=False)
        batch_op.create_index(
            "ix_operations_state_created_at_id", ["state", "created_at", "id"], unique=False
        )
        batch_op.create_index(
            "ix_operations_state_expires_at", ["state", "expires_at"], unique=False
        )

    op.create_table(
        "claims",
        sa.Column("id", sa.String(length=26), nullable=False),
        sa.Column("operation_id", sa.String(length=26), nullable=False),
        sa.Column(
            "confirmation_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("operator_open_id", sa.String(length=128), nullable=False),
        sa.Column("claimed_at", store.schema.tables.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["confirmation_id"],
            ["confirmations.id"],
            name=op.f("fk_claims_confirmation_id_confirmations"),
        ),
        sa.ForeignKeyConstraint(
            ["operation_id"], ["operations.id"], name=op.f("fk_claims_operation_id_operations")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_claims")),
        sa.UniqueConstraint("operation_id", name=op.f("uq_claims_operation_id")),
    )


def downgrade() -> None:
    op.drop_table("claims")
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_index("ix_operations_state_expires_at")
        batch_op.drop_index("ix_operations_state_created_at_id")
        batch_op.drop_index("ix_operations_created_at_id")

    op.drop_table("operations")
    with op.batch_alter_table("confirmations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_confirmations_operation_id"))

    op.drop_table("confirmations")
    with op.batch_alter_table("audit", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_audit_operation_id"))

    op.drop_table("audit")
