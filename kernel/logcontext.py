"""Which operation the current task works on, for logs (a context variable, no I/O)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

OPERATION: ContextVar[str | None] = ContextVar("countersign_operation", default=None)


@contextlib.contextmanager
def about(operation_id: str) -> Iterator[None]:
    """Log records made inside carry `operation_id` (bot.app.logs attaches it)."""
    token = OPERATION.set(operation_id)
    try:
        yield
    finally:
        OPERATION.reset(token)
