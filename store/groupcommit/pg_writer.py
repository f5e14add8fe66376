"""The PostgreSQL writer: one dedicated asyncpg connection, one transaction per batch."""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.engine import make_url

from store.groupcommit.contract import (
    DEFAULT_BATCH_LIMIT,
    ConditionNotMet,
    GroupWriter,
    Intent,
    Pending,
    Results,
    Row,
    Statement,
    Turn,
    intent_of,
    runs_of_intents,
)

# Awaited with the batch size after the intents ran and before COMMIT (tests hold it).
BeforeCommit = Callable[[int], Awaitable[None]]

# `:name` but not a `::type` cast; hand-written intents keep `:` out of their literals
_NAMED = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


@functools.lru_cache(maxsize=512)
def positional(sql: str) -> tuple[str, tuple[str, ...]]:
    """`:name` parameters as asyncpg's `$n`, and the names in `$n` order (a name used twice
    is one parameter)."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    return _NAMED.sub(number, sql), tuple(names)


def arguments(statement: Statement) -> tuple[str, list[Any]]:
    sql, names = positional(statement.sql)
    missing = [name for name in names if name not in statement.params]
    if missing:
        raise KeyError(f"statement parameters missing: {', '.join(missing)}")
    return sql, [statement.params[name] for name in names]


def asyncpg_dsn(sqlalchemy_url: str) -> str:
    """postgresql+asyncpg://... -> the postgresql://... asyncpg takes."""
    return make_url(sqlalchemy_url).set(drivername="postgresql").render_as_string(False)


async def run_intent(conn: asyncpg.Connection, intent: Intent) -> Results:
    results: list[list[Row]] = []
    for index, statement in enumerate(intent.statements):
        if not statement.runs_after(results):
            results.append([])
            continue
        sql, args = arguments(statement)
        rows = [dict(record) for record in await conn.fetch(sql, *args)]
        if statement.require_row and not rows:
            raise ConditionNotMet(index)
        results.append(rows)
    return tuple(results)


class PgGroupWriter(GroupWriter):
    """Serves the event loop it was started on."""

    def __init__(
        self,
        dsn: str,
        schema: str | None = None,
        *,
        batch_limit: int = DEFAULT_BATCH_LIMIT,
        before_commit: BeforeCommit | None = None,
    ) -> None:
        super().__init__(batch_limit)
        self._dsn = dsn
        self._schema = schema
        self._before_commit = before_commit
        self._conn: asyncpg.Connection | None = None
        self._work = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def for_url(
        cls,
        url: str,
        schema: str | None = None,
        *,
        batch_limit: int = DEFAULT_BATCH_LIMIT,
        before_commit: BeforeCommit | None = None,
    ) -> PgGroupWriter:
        return cls(asyncpg_dsn(url), schema, batch_limit=batch_limit, before_commit=before_commit)

    async def start(self) -> None:
        self._conn = await self._connect()
        self._task = asyncio.create_task(self._run(), name="countersign-group-commit")

    async def close(self) -> None:
        self._stop_accepting()
        if self._task is not None:
            await self._task

    def _wake(self) -> None:
        self._work.set()

    async def _connect(self) -> asyncpg.Connection:
        settings = {"search_path": self._schema} if self._schema else None
        return await asyncpg.connect(self._dsn, server_settings=settings)

    async def _run(self) -> None:
        try:
            while not self._drained:
                await self._work.wait()
                self._work.clear()
                while batch := self._take():
                    for run in runs_of_intents(batch):
                        if isinstance(run[0].intent, Turn):
                            given_back = self._lend(run[0])
                            await asyncio.to_thread(given_back.wait)
                        else:
                            await self._commit(run)
        finally:
            if self._conn is not None:
                await self._conn.close()

    async def _commit(self, batch: Sequence[Pending]) -> None:
        outcomes: list[Results | BaseException] = []
        try:
            if self._conn is None or self._conn.is_closed():
                self._conn = await self._connect()  # the server dropped us: a fresh one
            conn = self._conn
            transaction = conn.transaction()
            await transaction.start()
            try:
                for pending in batch:
                    outcomes.append(await self._in_savepoint(conn, intent_of(pending)))
                if self._before_commit is not None:
                    await self._before_commit(len(batch))
                await transaction.commit()
            except BaseException:
                if not conn.is_closed():
                    await transaction.rollback()
                raise
        except (Exception, asyncio.CancelledError) as error:
            self._fail_all(batch, error)
            if isinstance(error, asyncio.CancelledError):
                raise
            return
        self._committed(batch, outcomes)

    @staticmethod
    async def _in_savepoint(conn: asyncpg.Connection, intent: Intent) -> Results | BaseException:
        try:
            async with conn.transaction():  # nested: a SAVEPOINT
                return await run_intent(conn, intent)
        except (asyncpg.PostgresError, ConditionNotMet, KeyError) as error:
            return error  # the intent's own failure, rolled back to its savepoint
