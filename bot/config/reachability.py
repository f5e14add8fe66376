"""Can the store URL be used from here? `countersign config check` asks before a bot does.

SQLite: the file, or the directory it would be created in, is there and writable (nothing
is created by asking). PostgreSQL: a connection opens and answers within a few seconds.
Each failure is one problem in plain words naming what to do; None when all is well.
"""

from __future__ import annotations

import asyncio

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.engine import make_url

from kernel.problems import FieldProblem
from store import CONNECT_TIMEOUT_S, asyncpg_dsn, postgresql_failure, sqlite_problem

SQLITE_PREFIX = "sqlite+aiosqlite:///"
PG_PREFIX = "postgresql+asyncpg://"


async def store_problem(url: str) -> FieldProblem | None:
    if url.startswith(SQLITE_PREFIX):
        return await asyncio.to_thread(sqlite_problem, url.removeprefix(SQLITE_PREFIX))
    if url.startswith(PG_PREFIX):
        return await postgresql_problem(url)
    return None  # an unknown driver is `checks.store_url`'s problem


async def postgresql_problem(url: str) -> FieldProblem | None:
    try:
        connection = await asyncio.wait_for(
            asyncpg.connect(asyncpg_dsn(url)),
            CONNECT_TIMEOUT_S,
        )
    except Exception as error:
        problem = postgresql_failure(url, error)
        if problem is None:  # the server answered, but with something else
            shown = make_url(url).render_as_string(hide_password=True)
            problem = FieldProblem(
                "store.url",
                f"cannot connect to {shown}: the server said: {type(error).__name__}",
                "fix the URL or the server",
            )
        return problem
    await connection.close()
    return None
