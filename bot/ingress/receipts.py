"""Inbox entries of clicks that arrive together, written together.

A click is on record once its inbox entry is (its answer may then say "processing"). One
transaction per click made a burst of clicks wait for one commit each; here every click
waiting for its entry joins the next transaction, so a burst costs a few commits. Each
click still gets its own result: first, or a replay of an entry already stored.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from store.inbox import Inbox, Received
from store.writelane import answering_a_person

MAX_BATCH = 200

Waiting = tuple[str, dict[str, Any], "asyncio.Future[Received]"]


class Receipts:
    def __init__(self, inbox: Inbox, kind: str) -> None:
        self.inbox = inbox
        self.kind = kind
        self._waiting: list[Waiting] = []
        self._writer: asyncio.Task[None] | None = None

    async def receive(self, key: str, envelope: dict[str, Any]) -> Received:
        done: asyncio.Future[Received] = asyncio.get_running_loop().create_future()
        self._waiting.append((key, envelope, done))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write(), name="callback-receipts")
        return await done

    async def _write(self) -> None:
        while self._waiting:
            batch = self._waiting[:MAX_BATCH]
            del self._waiting[:MAX_BATCH]
            try:
                with answering_a_person():
                    received = await self.inbox.receive_many(
                        self.kind, [(key, envelope) for key, envelope, _ in batch]
                    )
            except Exception:  # one at a time, so one click's failure stays its own
                await self._write_each(batch)
                continue
            for (*_, done), result in zip(batch, received, strict=True):
                if not done.done():  # a click given up on (cancelled) takes no result
                    done.set_result(result)

    async def _write_each(self, batch: list[Waiting]) -> None:
        for key, envelope, done in batch:
            try:
                with answering_a_person():
                    result = await self.inbox.receive(self.kind, key, envelope)
            except Exception as error:  # the click's own task reports it
                if not done.done():
                    done.set_exception(error)
            else:
                if not done.done():
                    done.set_result(result)

    async def stop(self) -> None:
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
