"""INSERT ... ON CONFLICT DO NOTHING: the unique index keeps a row once, not a read before it."""

from __future__ import annotations

from sqlalchemy import Insert
from sqlalchemy.dialects import postgresql, sqlite

from store.schema.tables import Base


def insert_once(dialect: str, row: type[Base]) -> Insert:
    """An insert the database skips when any unique key of `row` is already taken; with
    RETURNING it returns no row then (both backends). `dialect`: `conn.dialect.name`."""
    if dialect == "postgresql":
        return postgresql.insert(row).on_conflict_do_nothing()
    return sqlite.insert(row).on_conflict_do_nothing()
