"""The store backends the suite runs on: which database a test (or its subprocess) uses."""

from __future__ import annotations

import os
from dataclasses import dataclass

PG_URL = os.environ.get(
    "COUNTERSIGN_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
TABLES = (
    "reservations",
    "accounts",
    "outcomes",
    "attempts",
    "card_deliveries",
    "claims",
    "confirmations",
    "audit",
    "inbox",
    "operations",
    "web_sessions",
    "web_sign_ins",
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
