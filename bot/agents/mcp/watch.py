"""Resource updates: an operation this server filed or read is followed while it moves, and
each change is published as `notifications/resources/updated` for its
`countersign://operations/{id}` to the MCP clients listening for it (the SDK's
`subscriptions/listen`, protocol 2026-07-28; older clients have no such stream).

Following is the API's own long poll (`wait_s`, `until=changed`) from this process; it ends
when the operation is final, when the API refuses (the operation is not this proposer's),
or when the server stops. At most FOLLOW_MAX operations are followed at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from mcp.server.subscriptions import ResourceUpdated, SubscriptionBus

from bot.agents.client import ApiError, Client
from bot.api.wire import MAX_WAIT_S
from store import reached

log = logging.getLogger("countersign.mcp")

FOLLOW_MAX = 100


def operation_uri(operation_id: str) -> str:
    return f"countersign://operations/{operation_id}"


class Follower:
    def __init__(self, client: Client, bus: SubscriptionBus) -> None:
        self.client = client
        self.bus = bus
        self.following: dict[str, asyncio.Task[None]] = {}

    def follow(self, operation_id: str) -> None:
        if operation_id in self.following or len(self.following) >= FOLLOW_MAX:
            return
        task = asyncio.create_task(self._follow(operation_id), name=f"follow {operation_id}")
        self.following[operation_id] = task
        task.add_done_callback(lambda _done: self.following.pop(operation_id, None))

    async def _follow(self, operation_id: str) -> None:
        try:
            view = await self.client.get(operation_id)
            while not reached(view, "final"):
                fresh = await self.client.get(operation_id, wait_s=MAX_WAIT_S, until="changed")
                if fresh.version != view.version:
                    await self.bus.publish(ResourceUpdated(uri=operation_uri(operation_id)))
                view = fresh
        except ApiError as error:
            log.info("stopped following %s: %s", operation_id, error.code)

    async def close(self) -> None:
        for task in list(self.following.values()):
            task.cancel()
        for task in list(self.following.values()):
            with contextlib.suppress(asyncio.CancelledError):
                await task
