"""Can the store URL be used from here? `countersign config check` asks before a bot does.

SQLite: the file, or the directory it would be created in, is there and writable (nothing
is created by asking). PostgreSQL: a connection opens and answers within a few seconds.
Each failure is one problem in plain words naming what to do; None when all is well.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.engine import make_url

from kernel.problems import FieldProblem
from store import asyncpg_dsn

CONNECT_TIMEOUT_S = 5.0
SQLITE_PREFIX = "sqlite+aiosqlite:///"
PG_PREFIX = "postgresql+asyncpg://"


async def store_problem(url: str) -> FieldProblem | None:
    if url.startswith(SQLITE_PREFIX):
        return await asyncio.to_thread(sqlite_problem, url.removeprefix(SQLITE_PREFIX))
    if url.startswith(PG_PREFIX):
        return await postgresql_problem(url)
    return None  # an unknown driver is `checks.store_url`'s problem


def sqlite_problem(location: str) -> FieldProblem | None:
    if location in ("", ":memory:"):
        return None
    path = Path(location)
    if path.is_dir():
        return FieldProblem("store.url", f"{path} is a directory", "name a database file in it")
    if path.exists():
        if not os.access(path, os.R_OK | os.W_OK):
            return FieldProblem(
                "store.url", f"{path} is not readable and writable", "fix its permissions"
            )
        return None
    parent = path.parent
    while not parent.exists():  # the bot creates missing directories on start
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        return FieldProblem(
            "store.url",
            f"{path} cannot be created: {parent} is not a writable directory",
            "choose a path under a directory this user may write",
        )
    return None


async def postgresql_problem(url: str) -> FieldProblem | None:
    parsed = make_url(url)
    shown = parsed.render_as_string(hide_password=True)
    where = f"{parsed.host or 'localhost'}:{parsed.port or 5432}"
    try:
        connection = await asyncio.wait_for(
            asyncpg.connect(asyncpg_dsn(url)),
            CONNECT_TIMEOUT_S,
        )
    except TimeoutError:
        reason, fix = f"nothing answered at {where} within {CONNECT_TIMEOUT_S:g} s", "start it"
    except socket.gaierror:
        reason, fix = f"no such host {parsed.host!r}", "correct the host name"
    except asyncpg.InvalidCatalogNameError:
        reason, fix = f"database {parsed.database!r} does not exist", "create it or fix the name"
    except (asyncpg.InvalidPasswordError, asyncpg.InvalidAuthorizationSpecificationError):
        reason, fix = f"the server refused user {parsed.username!r}", "fix the user or password"
    except OSError:
        reason, fix = f"nothing listens at {where}", "start PostgreSQL or fix the host and port"
    except asyncpg.PostgresError as error:
        reason, fix = f"the server said: {type(error).__name__}", "fix the URL or the server"
    else:
        await connection.close()
        return None
    return FieldProblem("store.url", f"cannot connect to {shown}: {reason}", fix)
