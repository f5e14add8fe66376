"""What a store read actually asks the database, and how the database plans it.

`captured` records every statement a call issues: SQLAlchemy's (a `before_cursor_execute`
listener on every `Engine`, so the store's engine, SQLite's reader and the writer's `Work`
connection alike) and the group-commit intents it commits (recorded on their way to the real
writer, which still runs them). `plan_problems` EXPLAINs each statement that touches a
history table and names what reads history whole; the rule is in tests/store/test_query_plans.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, event, text
from sqlalchemy.ext.asyncio import AsyncConnection

from store import Intent, Store

# every table that grows with history (docs: /work/shared/reference/growth.md §1)
HISTORY = frozenset(
    {
        "operations",
        "confirmations",
        "claims",
        "audit",
        "inbox",
        "card_deliveries",
        "attempts",
        "outcomes",
        "reservations",
        "deliveries",
        "delivery_attempts",
        "signals",
    }
)
_NOT_PLANNED = re.compile(r"^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|PRAGMA|SET)\b", re.I)
_PLAIN_INSERT = re.compile(r"^\s*INSERT\b(?:(?!\bSELECT\b).)*$", re.I | re.S)


@dataclass(frozen=True)
class Issued:
    sql: str
    params: Any
    driver: bool  # True: already in the driver's paramstyle; False: `:name` (an intent's)


@dataclass
class Capture:
    issued: list[Issued] = field(default_factory=list)

    def history(self) -> list[Issued]:
        """What is worth planning: statements that read a history table (a plain INSERT
        of values reads nothing; BEGIN, PRAGMA and the like are no query)."""
        return [
            one
            for one in self.issued
            if not _NOT_PLANNED.match(one.sql)
            and not _PLAIN_INSERT.match(one.sql)
            and _tables(one.sql) & HISTORY
        ]


def _tables(sql: str) -> set[str]:
    return {word.strip('"').lower() for word in re.findall(r'"?\b\w+\b"?', sql)}


@asynccontextmanager
async def captured(store: Store) -> AsyncIterator[Capture]:
    capture = Capture()

    def record(
        _conn: Any, _cursor: Any, statement: str, params: Any, _context: Any, many: bool
    ) -> None:
        # a statement run for many rows is planned once, with the first row's values
        capture.issued.append(Issued(statement, params[0] if many else params, driver=True))

    real = store.commit_intent

    async def commit_intent(intent: Intent) -> Any:
        for statement in intent.statements:
            capture.issued.append(Issued(statement.sql, dict(statement.params), driver=False))
        return await real(intent)

    event.listen(Engine, "before_cursor_execute", record)
    store.commit_intent = commit_intent  # type: ignore[method-assign]
    try:
        yield capture
    finally:
        event.remove(Engine, "before_cursor_execute", record)
        del store.commit_intent


@dataclass(frozen=True)
class Allowed:
    """What one query may and must do: `walks`, indexes it may walk from one end (no WHERE
    on the table, its order is the index's, a LIMIT stops it); `paged`, a page a person
    pages through, which must come in its index's order (no sort of everything that
    matched); `uses`, indexes its plan must name (the ones made for it)."""

    walks: frozenset[str] = frozenset()
    paged: bool = False
    uses: frozenset[str] = frozenset()


async def plan_problems(store: Store, capture: Capture, allowed: Allowed) -> list[str]:
    statements = capture.history()
    assert statements, "the call issued no statement over a history table"
    problems: list[str] = []
    used: set[str] = set()
    async with store.engine.connect() as conn:
        partial = await _partial_indexes(conn, store.sqlite)
        for one in statements:
            if store.sqlite:
                found, names = await _sqlite_plan(conn, one, partial, allowed)
            else:
                found, names = await _pg_plan(conn, one, partial, allowed)
            used |= names
            problems += [f"{problem}\n    in: {' '.join(one.sql.split())}" for problem in found]
        await conn.rollback()
    problems += [f"does not use {name}" for name in sorted(allowed.uses - used)]
    return problems


async def _partial_indexes(conn: AsyncConnection, sqlite: bool) -> frozenset[str]:
    if sqlite:
        query = "SELECT name FROM sqlite_master WHERE type = 'index' AND sql LIKE '% WHERE %'"
    else:
        # the catalogue itself, not pg_indexes: that view renders every schema's index
        # definitions, and another test session dropping its schema meanwhile fails the read
        query = (
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
            " WHERE c.relnamespace = current_schema()::regnamespace AND i.indpred IS NOT NULL"
        )
    return frozenset((await conn.exec_driver_sql(query)).scalars())


async def _explain(conn: AsyncConnection, prefix: str, one: Issued) -> Sequence[Any]:
    if one.driver:
        params = tuple(one.params) if isinstance(one.params, list | tuple) else one.params
        return (await conn.exec_driver_sql(prefix + one.sql, params)).all()
    return (await conn.execute(text(prefix + one.sql), one.params)).all()


_SQLITE_STEP = re.compile(
    r"^(SCAN|SEARCH) (\w+)(?: AS \w+)?(?: USING (?:COVERING )?INDEX (\w+))?(?: \((.*)\))?"
)


async def _sqlite_plan(
    conn: AsyncConnection, one: Issued, partial: frozenset[str], allowed: Allowed
) -> tuple[list[str], set[str]]:
    problems: list[str] = []
    names: set[str] = set()
    for row in await _explain(conn, "EXPLAIN QUERY PLAN ", one):
        detail = row[3]
        if "TEMP B-TREE" in detail and allowed.paged and not names & partial:
            problems.append(f"sorts what it read: {detail}")
        step = _SQLITE_STEP.match(detail)
        if step is None:
            continue
        kind, table, index, _seek = step.groups()
        if index:
            names.add(index)
        if table not in HISTORY or kind == "SEARCH":
            continue
        if index is None:
            problems.append(f"reads all of {table}: {detail}")
        elif index not in partial and index not in allowed.walks:
            problems.append(f"walks all of {index} on {table}: {detail}")
    return problems, names


async def _pg_plan(
    conn: AsyncConnection, one: Issued, partial: frozenset[str], allowed: Allowed
) -> tuple[list[str], set[str]]:
    await conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
    # a page: would any index give its order? (else a small table is sorted by choice)
    await conn.exec_driver_sql(f"SET LOCAL enable_sort = {'off' if allowed.paged else 'on'}")
    [(plan,)] = await _explain(conn, "EXPLAIN (FORMAT JSON) ", one)
    nodes = list(_nodes((json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]))
    names = {node["Index Name"] for node in nodes if "Index Name" in node}
    problems: list[str] = []
    for node in nodes:
        kind, table, index = node["Node Type"], node.get("Relation Name"), node.get("Index Name")
        if kind in ("Sort", "Incremental Sort") and allowed.paged and not names & partial:
            problems.append(f"sorts what it read: {kind} by {node.get('Sort Key')}")
        if kind == "Seq Scan" and table in HISTORY:
            problems.append(f"reads all of {table}: Seq Scan")
        elif index and "Index Cond" not in node:
            if index not in partial and index not in allowed.walks:
                problems.append(f"walks all of {index}: {kind}")
    if problems:  # the plan, one node a line, to read what it does instead
        problems.append("plan: " + " / ".join(_node_line(node) for node in nodes))
    return problems, names


def _node_line(node: dict[str, Any]) -> str:
    said = [node["Node Type"], node.get("Relation Name"), node.get("Index Name")]
    said += [f"{key}: {node[key]}" for key in ("Index Cond", "Filter", "Sort Key") if key in node]
    return " ".join(str(part) for part in said if part)


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", ()):
        yield from _nodes(child)
