"""the drafts a filing superseded, found by their audit entries (issue 36)

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-07 06:30:00

A proposal's answer names the open drafts its filing superseded, and a retried filing (the
same request_id) answers the same: it reads them back from the audit log, through the
superseded entries' evidence (the newer draft's id). ix_audit_superseded_by holds just those
entries, so the read never walks the log as it grows.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

SUPERSEDED_ENTRY = "event = 'superseded'"


def upgrade() -> None:
    op.create_index(
        "ix_audit_superseded_by",
        "audit",
        ["evidence"],
        sqlite_where=sa.text(SUPERSEDED_ENTRY),
        postgresql_where=sa.text(SUPERSEDED_ENTRY),
    )


def downgrade() -> None:
    op.drop_index("ix_audit_superseded_by", table_name="audit")
