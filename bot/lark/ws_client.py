"""The lark-oapi `ws.Client` subclass the long connection runs, and how its loop ends.

Only the data-frame path is replaced (made async, so callbacks overlap and each frame awaits
its answer without blocking the SDK loop); connect, disconnect and every frame are reported
to the transport (bot/lark/ws.py), which owns the thread, the watchdog and the answers.
The private SDK methods overridden here are the ones bot/lark/sdk_check.py checks at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any, Protocol

import lark_oapi.ws.client as lark_ws_client  # type: ignore[import-untyped]

log = logging.getLogger("countersign.lark.ws")

FRAME_TYPES = ("event", "card")  # lark_oapi.ws.enum.MessageType data frames


class FrameSink(Protocol):
    """What the client tells its transport, and asks it for each data frame's ack."""

    sdk_log_level: Any

    def note_connected(self) -> None: ...
    def note_disconnected(self) -> None: ...
    def note_reconnected(self) -> None: ...
    def note_frame(self) -> None: ...
    async def ack_for(self, payload: bytes) -> dict[str, Any]: ...


def close_sdk_loop(loop: asyncio.AbstractEventLoop, client: Any) -> None:
    """End a lark-oapi ws client's thread loop: cancel its tasks, close its socket, close the loop."""
    # Cancel twice: the SDK's ping loop sleeps in a `finally`, which can swallow one cancel.
    for _ in range(2):
        tasks = asyncio.all_tasks(loop)
        if not tasks:
            break
        for task in tasks:
            task.cancel()
        loop.run_until_complete(asyncio.wait(tasks, timeout=1.0))
    conn = getattr(client, "_conn", None)
    if conn is not None:  # a clean close, so the server sees the client leave at once
        with contextlib.suppress(Exception):
            loop.run_until_complete(asyncio.wait_for(conn.close(), 2.0))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


class FrameClient(lark_ws_client.Client):  # type: ignore[misc]
    """`ws.Client` with its data-frame path made async; everything else is the SDK's."""

    def __init__(self, transport: FrameSink, app_id: str, app_secret: str, domain: str) -> None:
        super().__init__(
            app_id,
            app_secret,
            log_level=transport.sdk_log_level,
            event_handler=None,  # unused: _handle_data_frame below never reaches it
            domain=domain,
        )
        self._transport = transport
        self.on_reconnected = transport.note_reconnected

    async def _connect(self) -> None:
        await super()._connect()
        if self._conn is not None:
            self._transport.note_connected()

    async def _disconnect(self) -> None:
        try:
            await super()._disconnect()
        finally:
            self._transport.note_disconnected()

    async def _handle_message(self, msg: bytes) -> None:
        self._transport.note_frame()  # pongs and data frames both prove the link is alive
        await super()._handle_message(msg)

    async def _handle_data_frame(self, frame: Any) -> None:
        headers = {h.key: h.value for h in frame.headers}
        message_id = headers.get("message_id", "")
        frame_type = headers.get("type", "")
        try:
            total = int(headers.get("sum", "1"))
            seq = int(headers.get("seq", "0"))
        except ValueError:
            log.error("data frame %s with bad sum/seq headers dropped", message_id)
            return
        payload = bytes(frame.payload)
        if total > 1:
            combined = self._combine(message_id, total, seq, payload)  # the SDK's reassembly
            if combined is None:
                return  # more fragments to come; only the completing one is acked
            # The SDK keeps the parts cached for 5 s, so a resend of this message_id would be
            # "completed" from stale parts; expire the entry now.
            self._cache.set(message_id, None, 0)
            payload = combined
        if frame_type not in FRAME_TYPES:
            log.debug("data frame %s of type %r ignored", message_id, frame_type)
            return
        started = time.monotonic()
        ack = await self._transport.ack_for(payload)
        biz_rt = frame.headers.add()
        biz_rt.key = "biz_rt"
        biz_rt.value = str(round((time.monotonic() - started) * 1000))
        frame.payload = json.dumps(ack, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        await self._write_message(frame.SerializeToString())
