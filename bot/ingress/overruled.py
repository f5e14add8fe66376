"""Clicks a transport answered for itself: the consumer's card answer never reached Lark.

A transport that has not had the consumer's answer by its deadline acks "processing" on
its own (bot/lark/ingress_port.py `bounded_answer`), on its own thread: the consumer's loop
may be stuck. When that loop moves again, the consumer may still answer within its budget
(which started late) and record the card its answer carried as shown; Lark never got that
card. So the transport says which click it answered (`answered_for`), the consumer says
which click's card it recorded as shown (`shown`), and whichever comes second makes that
card due again, so the card worker patches it. Thread-safe; entries expire after a while.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

KEEP_S = 120.0  # far beyond any ack: what is older can no longer meet its other half


class Overruled:
    def __init__(self, due_again: Callable[[str], None]) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None  # the consumer's, once it shows
        self._due_again = due_again  # on the consumer's loop: operation id -> make it due
        self._lock = threading.Lock()
        self._answered_for: dict[str, float] = {}  # event id -> when
        self._shown: dict[str, tuple[str, float]] = {}  # event id -> (operation id, when)

    def answered_for(self, event_id: str) -> None:
        """From the transport's thread: it acked this click itself, with "processing"."""
        with self._lock:
            self._expire()
            shown = self._shown.pop(event_id, None)
            if shown is None or self._loop is None:
                self._answered_for[event_id] = time.monotonic()
                return
            loop = self._loop
        loop.call_soon_threadsafe(self._due_again, shown[0])

    def shown(self, event_id: str, operation_id: str) -> bool:
        """On the consumer's loop: this click's answer was recorded as showing its card.
        True if the transport had already answered for it (the card is due again)."""
        with self._lock:
            self._loop = asyncio.get_running_loop()
            self._expire()
            if self._answered_for.pop(event_id, None) is None:
                self._shown[event_id] = (operation_id, time.monotonic())
                return False
        self._due_again(operation_id)
        return True

    def _expire(self) -> None:
        """Drop what is too old to meet its other half: oldest first (dicts keep the order
        of insertion, which is the order of time), so each call does little."""
        cutoff = time.monotonic() - KEEP_S
        while self._answered_for and next(iter(self._answered_for.values())) < cutoff:
            del self._answered_for[next(iter(self._answered_for))]
        while self._shown and next(iter(self._shown.values()))[1] < cutoff:
            del self._shown[next(iter(self._shown))]
