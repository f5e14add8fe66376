"""Alembic environment: always runs on a connection handed in by store.schema.migrate."""

from __future__ import annotations

from alembic import context

import store.sessions.session_rows  # noqa: F401  (its tables on Base)
from store.schema.tables import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations with `countersign db upgrade`, not the alembic CLI")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
