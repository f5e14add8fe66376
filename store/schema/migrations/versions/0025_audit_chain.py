"""the audit log becomes a hash chain (issue 35): each entry linked to the one before

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-06 20:40:00

- audit.txid: on PostgreSQL the writing transaction's id (a server default), so the chainer
  links only what every transaction older than it has finished writing (SQLite has one
  writer: an entry's id is its order);
- audit.chain_seq, prev_hash, entry_hash: the link, set by the chainer;
- ix_audit_unchained: what is still to link, partial, so the chainer never reads history;
- audit_chain: the head (one row: the last link's seq and hash), locked while linking.
Entries already on record are linked in id order by the first chainer pass.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

GENESIS = "0" * 64
UNCHAINED = "chain_seq IS NULL"


def upgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    txid_default = sa.text("(pg_current_xact_id()::text::bigint)") if postgresql else None
    with op.batch_alter_table("audit", schema=None) as batch_op:
        batch_op.add_column(sa.Column("txid", sa.BigInteger(), server_default=txid_default))
        batch_op.add_column(sa.Column("chain_seq", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("prev_hash", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("entry_hash", sa.String(length=64), nullable=True))
        batch_op.create_unique_constraint("uq_audit_chain_seq", ["chain_seq"])
        batch_op.create_index(
            "ix_audit_unchained",
            ["txid", "id"],
            unique=False,
            sqlite_where=sa.text(UNCHAINED),
            postgresql_where=sa.text(UNCHAINED),
        )
    head = op.create_table(
        "audit_chain",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("head_hash", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_chain")),
    )
    op.bulk_insert(head, [{"id": 1, "seq": 0, "head_hash": GENESIS}])


def downgrade() -> None:
    op.drop_table("audit_chain")
    with op.batch_alter_table("audit", schema=None) as batch_op:
        batch_op.drop_index("ix_audit_unchained")
        batch_op.drop_constraint("uq_audit_chain_seq", type_="unique")
        batch_op.drop_column("entry_hash")
        batch_op.drop_column("prev_hash")
        batch_op.drop_column("chain_seq")
        batch_op.drop_column("txid")
