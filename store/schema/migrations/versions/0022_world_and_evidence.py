"""which world an operation acts in, and an attempt's durable evidence (issue 32)

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-06 09:40:00

`operations.world` (store.vocabulary.World, checked; NULL: not a venue, e.g. a Lark
message) is marked on every surface and bound into the confirm digest. Every operation
filed before it acted in the built-in simulated venue if it was simulated, and in no venue
otherwise, so earlier rows get 'simulated' where `simulated` is true and stay NULL else
(their stored digests stay recomputable: store/authority/envelope.py leaves that world out).

`attempts.evidence` (canonical JSON, written once before the request leaves) is what a
runner must be able to show when it reconciles an attempt: a signed request and its nonce.
The downgrade drops both columns, and with them any evidence recorded.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from store.vocabulary import allowed_sql

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

# store.vocabulary.World as of this revision, frozen here
WORLDS = ("simulated", "emulator", "testnet", "live")


def upgrade() -> None:
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("world", sa.String(length=16), nullable=True))
        batch_op.create_check_constraint(op.f("ck_operations_world"), allowed_sql("world", WORLDS))
    operations = sa.table("operations", sa.column("simulated", sa.Boolean()), sa.column("world"))
    op.execute(
        operations.update().where(operations.c.simulated.is_(True)).values(world="simulated")
    )
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("evidence", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_column("evidence")
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_operations_world"), type_="check")
        batch_op.drop_column("world")
