"""The store backends the suite runs on: which database a test (or its subprocess) uses."""

from __future__ import annotations

import os
from dataclasses import dataclass

from store import tables_children_first

PG_URL = os.environ.get(
    "COUNTERSIGN_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
# Every table a test may write, children before their parents (what a test's DELETEs go by);
# the audit chain's head row is reset, not deleted.
TABLES = tuple(table for table in tables_children_first() if table != "audit_chain")


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
