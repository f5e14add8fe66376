"""The text listener's failures: what is never tried again, and what is, when.

A text event no try could ever answer is recorded failed at once, with its reason, and
logged once (a re-push of it finds the record and is not logged again): an event of a shape
Lark never sends (bot/ingress/envelope_shape.py), or a reply Lark refused for good (a
"terminal" error, bot/lark/tokens.py). Anything else is tried again with a doubling backoff,
at most `max_tries` times in all, then recorded failed the same way; never a silent loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from bot.ingress.envelope_shape import text_envelope_problem, text_key
from bot.ingress.stats import ConsumerStats
from store import Store, record_failure

log = logging.getLogger("countersign.text")

FIRST_RETRY_S = 2.0
MAX_RETRY_S = 60.0
MAX_ERROR_CHARS = 300


def retry_in(failures: int) -> float:
    """Seconds before the next try after `failures` failed ones (1, 2, ...)."""
    return min(MAX_RETRY_S, FIRST_RETRY_S * 2.0 ** (failures - 1))


def is_terminal(error: BaseException) -> bool:
    """Lark said no for good (e.g. 230001, the message is unknown): no try will succeed."""
    return getattr(error, "kind", None) == "terminal"


def failure_reason(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:MAX_ERROR_CHARS]


class TextRetries:
    def __init__(self, store: Store, stats: ConsumerStats, max_tries: int, kind: str) -> None:
        self.store = store
        self.stats = stats
        self.max_tries = max_tries
        self.kind = kind  # the inbox kind of text entries
        self._failures: dict[str, int] = {}  # key -> failed tries in this process

    async def refused(self, envelope: Any) -> bool:
        """True (and recorded failed) if this envelope is not a text event Lark could send."""
        problem = text_envelope_problem(envelope)
        if problem is None:
            return False
        self.stats.outcomes["malformed"] += 1
        await self._give_up(envelope, f"malformed event: {problem}")
        return True

    def succeeded(self, envelope: Any) -> None:
        self._failures.pop(text_key(envelope) or "", None)

    async def failed(
        self,
        envelope: Any,
        error: Exception,
        requeue: Callable[[Any], None] | None,
    ) -> None:
        """One try raised `error`: given up (terminal, or the last try), or `requeue`d later
        (None: the caller's next run tries again)."""
        key = text_key(envelope) or ""
        tries = self._failures[key] = self._failures.get(key, 0) + 1
        if is_terminal(error) or tries >= self.max_tries:
            self._failures.pop(key, None)
            await self._give_up(envelope, failure_reason(error))
            return
        if requeue is None:  # recovery at start: the next start tries again
            log.warning("recovering text %s failed (%s)", key, failure_reason(error))
            return
        delay = retry_in(tries)
        log.warning(
            "answering text %s failed (%s); try %d of %d in %.0f s",
            key,
            failure_reason(error),
            tries + 1,
            self.max_tries,
            delay,
        )
        self.stats.outcomes["retried"] += 1
        asyncio.get_running_loop().call_later(delay, requeue, envelope)

    async def _give_up(self, envelope: Any, reason: str) -> None:
        key = text_key(envelope)
        if key is None:  # nothing to keep it by: Lark re-pushes it a few times at most
            log.warning("text event not answered, for good: %s", reason)
            return
        try:
            first = await record_failure(self.store, self.kind, key, reason)
        except Exception:  # the store is down: a re-push or a restart meets it again
            log.exception("recording text %s as failed did not work", key)
            return
        if first:
            self.stats.outcomes["failed"] += 1
            log.warning("text %s not answered, for good: %s", key, reason)
