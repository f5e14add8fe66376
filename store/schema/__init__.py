"""The tables, their column types and the Alembic migrations that build them."""

# Every table module, so the metadata holds them all whichever one a caller imports first.
from store.schema import audit_tables, delegation_tables, policy_tables  # noqa: F401
