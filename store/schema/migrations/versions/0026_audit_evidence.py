"""a decision's audit entry keeps the digest of what it came from (issue 35)

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-06 23:40:00

- audit.evidence: for a decision or a refusal, the SHA-256 of the verified click or web post
  as the inbox keeps it (bot/decide/provenance.py, store/inbox/inbox.py `payload_digest`),
  so the chain vouches for the request itself, and a pruned inbox payload still has its
  digest here. Covered by the entry's hash when set (store/audit/chain.py). A plain ADD
  COLUMN: no table rebuild, on either backend.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("audit", sa.Column("evidence", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("audit", schema=None) as batch_op:
        batch_op.drop_column("evidence")
