"""Why a store could not be reached, in one sentence naming what to do.

`countersign config check` asks the server before a bot starts (bot/config/reachability.py);
a command that opens the store itself (`run`, `worker`, `db upgrade`, the operator tools)
meets the same failures as exceptions. Both say them in the same words: `StoreUnreachable`
carries the problem, and the CLI's boundary prints it instead of a traceback.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.engine import make_url

from kernel.problems import FieldProblem

CONNECT_TIMEOUT_S = 5.0
SQLITE_PREFIX = "sqlite+aiosqlite:///"


class StoreUnreachable(RuntimeError):
    """The store's server or file cannot be used from here; nothing was changed."""

    def __init__(self, problem: FieldProblem) -> None:
        super().__init__(problem.line())
        self.problem = problem


def sqlite_problem(location: str) -> FieldProblem | None:
    """What keeps the SQLite file at `location` from being opened or created (nothing is
    created by asking); None when it can be."""
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


def postgresql_failure(url: str, error: BaseException) -> FieldProblem | None:
    """The problem a failed connection to the PostgreSQL at `url` names (None: `error` is
    not a failure to connect). The URL is shown without its password."""
    parsed = make_url(url)
    shown = parsed.render_as_string(hide_password=True)
    where = f"{parsed.host or 'localhost'}:{parsed.port or 5432}"
    for cause in _causes(error):
        if isinstance(cause, TimeoutError):
            reason, fix = f"nothing answered at {where} within {CONNECT_TIMEOUT_S:g} s", "start it"
        elif isinstance(cause, socket.gaierror):
            reason, fix = f"no such host {parsed.host!r}", "correct the host name"
        elif isinstance(cause, asyncpg.InvalidCatalogNameError):
            reason = f"database {parsed.database!r} does not exist"
            fix = "create it or fix the name"
        elif isinstance(
            cause, asyncpg.InvalidPasswordError | asyncpg.InvalidAuthorizationSpecificationError
        ):
            reason, fix = f"the server refused user {parsed.username!r}", "fix the user or password"
        elif isinstance(cause, OSError):
            reason, fix = f"nothing listens at {where}", "start PostgreSQL or fix the host and port"
        else:
            continue
        return FieldProblem("store.url", f"cannot connect to {shown}: {reason}", fix)
    return None


def _causes(error: BaseException) -> Iterator[BaseException]:
    """`error` and what it wraps (SQLAlchemy's `orig`, `__cause__`), outermost first."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        orig = getattr(current, "orig", None)
        current = orig if isinstance(orig, BaseException) else current.__cause__


@contextlib.contextmanager
def reaching(url: str) -> Iterator[None]:
    """Turn a failure to reach the store at `url` into `StoreUnreachable`; anything else
    (a failure once connected) passes through as it is."""
    try:
        yield
    except Exception as error:
        if url.startswith(SQLITE_PREFIX):
            problem = sqlite_problem(url.removeprefix(SQLITE_PREFIX))
        else:
            problem = postgresql_failure(url, error)
        if problem is None:
            raise
        raise StoreUnreachable(problem) from None
