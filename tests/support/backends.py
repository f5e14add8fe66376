"""The store backends the suite runs on: which database a test (or its subprocess) uses."""

from __future__ import annotations

import os
from dataclasses import dataclass

import store.sessions.session_rows  # noqa: F401  (it registers the web's tables on the metadata)
from store.schema.tables import Base

PG_URL = os.environ.get(
    "COUNTERSIGN_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
# Every table a test may write, children before their parents (what a test's DELETEs go by);
# the audit chain's head row is reset, not deleted.
TABLES = tuple(
    table.name for table in reversed(Base.metadata.sorted_tables) if table.name != "audit_chain"
)


@dataclass(frozen=True)
class Backend:
    name: str
    url: str
    schema: str | None

    def env(self) -> dict[str, str]:
        """How a subprocess reaches the same database."""
        values = {"COUNTERSIGN_STORE_URL": self.url}
        if self.schema:
            values["COUNTERSIGN_STORE_SCHEMA"] = self.schema
        return values
