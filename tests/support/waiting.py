"""Waiting for a condition: the one `eventually` every test uses."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

Check = Callable[[], bool | Awaitable[bool]]

# Every deadline is multiplied by this (CI sets 3): a deadline only bounds a failure, so a
# slow or shared machine stretches how long a broken test takes to fail, never what passes.
DEADLINE_SCALE = float(os.environ.get("COUNTERSIGN_DEADLINE_SCALE") or 1)


def scaled(deadline_s: float) -> float:
    return deadline_s * DEADLINE_SCALE


class Notifier(Protocol):
    """What publishes its changes: the sandbox's state (`larksandbox.state.SandboxState`)."""

    def subscribe(self) -> asyncio.Queue[Any]: ...

    def unsubscribe(self, queue: asyncio.Queue[Any], /) -> None: ...


async def eventually(
    check: Check,
    # Generous: a deadline only bounds a failure, and CI runs two suites side by side.
    deadline_s: float = 30.0,
    *,
    what: str | None = None,
    woken_by: Notifier | None = None,
    interval_s: float = 0.02,
) -> None:
    """Wait until `check()` holds (a plain or an async predicate); fail the test after `deadline_s`.

    `check` is polled every `interval_s`. With `woken_by` (the sandbox's state, which publishes
    every change) it is also checked the moment something changes, so a wait on the sandbox
    ends without polling delay. The deadline is looked at between checks: a check that can hang
    is bounded by its own timeouts. On failure the message names `what` (or the check itself).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + scaled(deadline_s)
    changes = woken_by.subscribe() if woken_by is not None else None
    try:
        while not await _holds(check):
            if loop.time() > deadline:
                raise AssertionError(
                    f"not within {scaled(deadline_s)} s: {what or _described(check)}"
                )
            if changes is None:
                await asyncio.sleep(interval_s)
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changes.get(), interval_s)
    finally:
        if woken_by is not None and changes is not None:
            woken_by.unsubscribe(changes)


async def _holds(check: Check) -> bool:
    result = check()
    if inspect.isawaitable(result):
        result = await result
    return bool(result)


def _described(check: Check) -> str:
    """The check's name, or for a lambda the source line that holds it."""
    name = getattr(check, "__qualname__", None) or repr(check)
    if name.endswith("<lambda>"):
        with contextlib.suppress(OSError, TypeError):
            source = " ".join(inspect.getsource(check).split())
            return source if len(source) <= 300 else source[:297] + "..."
    return name
