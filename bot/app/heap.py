"""The garbage collector in a long-running server: what startup made stays out of full scans.

A full (generation 2) collection walks every tracked object and stops every thread meanwhile.
After startup that is mostly imports: lark-oapi's models, SQLAlchemy, pydantic, the sandbox.
With 100 clicks in flight one such pass took ~300 ms in the bot (three per 1,000 clicks),
stalling answers, the group-commit writer holding SQLite's lock, and the worker process
alike. Moved to the permanent generation once the process is ready, they are never walked
again; later garbage is collected as before.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def startup_heap_frozen() -> Iterator[None]:
    """Freeze what is alive now until the block ends.

    Only the young generations are collected first: a full collection here would cost
    what it saves, and in a process that serves many times over (the test suite) it
    would walk a heap that only grows. Unfrozen at the end, so such a process does not
    keep the cyclic garbage of earlier runs forever."""
    gc.collect(1)
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
