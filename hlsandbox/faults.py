"""Faults queued through the control API, and the per-IP request weight.

A fault applies to the next `count` /exchange requests whose action is an order or a cancel
(a `noop` fence, leverage and the rest pass untouched), in the order the faults were queued.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

KINDS = (
    "drop_answer",
    "delay_commit",
    "error_5xx_after_commit",
    "deliver_twice",
    "rate_limited",
    "drop_fee",
)
FAULTED_ACTIONS = ("order", "cancel", "cancelByCloid")
WINDOW_MS = 60_000


@dataclass
class Fault:
    kind: str
    count: int = 1
    delay_ms: int | None = None  # delay_commit: None holds the request until `release`
    close: bool = False  # drop_answer: close the connection at once instead of holding it

    def view(self) -> dict[str, Any]:
        return asdict(self)


def parse_fault(body: Any) -> Fault:
    """A fault from the control API's JSON; ValueError names the field and the fix."""
    if not isinstance(body, dict):
        raise ValueError('body: {"kind": ..., "count": 1}')
    kind = body.get("kind")
    if kind not in KINDS:
        raise ValueError(f"kind: one of {', '.join(KINDS)}")
    count = body.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError("count: a positive integer (requests the fault applies to)")
    delay = body.get("delay_ms")
    if delay is not None and (not isinstance(delay, int) or isinstance(delay, bool) or delay < 0):
        raise ValueError("delay_ms: milliseconds (>= 0), or null to hold until release")
    close = body.get("close", False)
    if not isinstance(close, bool):
        raise ValueError("close: true or false")
    return Fault(kind, count, delay, close)


class Faults:
    def __init__(self) -> None:
        self.queued: list[Fault] = []
        # delay_commit requests held until `release`: each commits when called
        self.held: list[Callable[[], None]] = []
        self.pending: set[asyncio.Future[Any]] = set()
        self.stopping = asyncio.Event()

    def add(self, fault: Fault) -> None:
        self.queued.append(fault)

    def clear(self) -> None:
        self.queued.clear()

    def take(self, action: Any) -> Fault | None:
        kind = action.get("type") if isinstance(action, dict) else None
        if kind not in FAULTED_ACTIONS or not self.queued:
            return None
        fault = self.queued[0]
        fault.count -= 1
        if fault.count == 0:
            self.queued.pop(0)
        return Fault(fault.kind, 1, fault.delay_ms, fault.close)

    def release(self) -> int:
        held, self.held = self.held, []
        for commit in held:
            commit()
        return len(held)

    def stop(self) -> None:
        """At shutdown: answer nothing more; held requests never commit."""
        self.stopping.set()
        self.held.clear()
        for future in self.pending:
            if not future.done():
                future.cancel()


class IpWeights:
    """Hyperliquid's REST limit per IP: a total weight per rolling minute."""

    def __init__(self) -> None:
        self.spent: dict[str, deque[tuple[int, int]]] = {}

    def charge(self, ip: str, weight: int, now_ms: int, cap: int) -> bool:
        spent = self.spent.setdefault(ip, deque())
        while spent and spent[0][0] <= now_ms - WINDOW_MS:
            spent.popleft()
        if sum(w for _t, w in spent) + weight > cap:
            return False
        spent.append((now_ms, weight))
        return True
