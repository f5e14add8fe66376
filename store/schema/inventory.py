"""Every table the store writes, from the schema's metadata (the web's sessions included):
for tools that empty or copy a store whole, children before their parents."""

from __future__ import annotations

import store.sessions.session_rows  # noqa: F401  (it registers the web's tables on the metadata)
from store.schema.tables import Base


def tables_children_first() -> tuple[str, ...]:
    """Every table's name, each after the tables that point at it (a DELETE order)."""
    return tuple(table.name for table in reversed(Base.metadata.sorted_tables))
