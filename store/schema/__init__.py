"""The tables, their column types and the Alembic migrations that build them."""
