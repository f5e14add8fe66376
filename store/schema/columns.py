"""The declarative base of the store's tables and the column types and helpers they share
(store/schema/tables.py, store/sessions/session_rows.py): naming convention, ids, UTC times, vocabulary
checks."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    DateTime,
    Dialect,
    ForeignKey,
    Integer,
    MetaData,
)
from sqlalchemy.orm import DeclarativeBase, MappedColumn, mapped_column
from sqlalchemy.types import TypeDecorator

from store.vocabulary import CHECKED, check_sql

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
}

# SQLite only autoincrements INTEGER PRIMARY KEY.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in Python; timestamptz on PostgreSQL, naive UTC text on SQLite."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store; use aware UTC datetimes")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


def operation_ref(*, unique: bool = False, index: bool = False) -> MappedColumn[str]:
    """The operation a row belongs to (a foreign key)."""
    return mapped_column(ForeignKey("operations.id"), nullable=False, unique=unique, index=index)


def vocabulary_checks(table: str) -> tuple[CheckConstraint, ...]:
    """`CHECK (column IN (...))` for every column of `table` with a vocabulary (named
    `ck_<table>_<column>`, as migration 0006 creates them)."""
    return tuple(
        CheckConstraint(check_sql(column, vocabulary), name=column)
        for (name, column), vocabulary in CHECKED.items()
        if name == table
    )
