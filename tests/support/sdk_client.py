"""Run the unmodified lark-oapi `ws.Client` against the sandbox, in a thread or in a subprocess.

In a thread: docs/lark-reference.md §2.8 mode D (fresh loop in the thread, `lark_oapi.ws.client.loop` set to it
before the client is built and started). The SDK has no stop(); `SdkThread.stop()` stops the
thread's loop, cancels the SDK's tasks and closes its socket, so tests do not leak into each other.

The SDK keeps its loop in ONE module global, so two clients in one process race (issue #119):
a second client runs as a subprocess, `python -m tests.support.sdk_client DOMAIN APP_ID SECRET`,
which prints `event <event_id>` for each im.message.receive_v1 it handles.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any

import lark_oapi as lark  # type: ignore[import-untyped]
import lark_oapi.ws.client as lark_ws_client  # type: ignore[import-untyped]

from bot.lark.ws_client import close_sdk_loop


class SdkThread:
    """One lark-oapi ws.Client running in its own daemon thread and event loop."""

    def __init__(self, app_id: str, app_secret: str, domain: str, handler: Any) -> None:
        self.app_id = app_id
        self.app_secret = app_secret
        self.domain = domain
        self.handler = handler
        self.client: Any = None
        self.error: BaseException | None = None  # what start() raised, if it returned
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._run, name="lark-ws", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        lark_ws_client.loop = loop  # before the client exists: it schedules on this global
        self._loop = loop
        try:
            self.client = lark.ws.Client(
                self.app_id,
                self.app_secret,
                event_handler=self.handler,
                domain=self.domain,
                log_level=lark.LogLevel.WARNING,
            )
            self.client.start()  # blocks until stop() stops the loop, or raises
        except RuntimeError as error:
            if "stopped before Future completed" not in str(error):
                self.error = error
        except BaseException as error:  # ClientException on bad credentials, ...
            self.error = error
        finally:
            self._shutdown(loop)

    def _shutdown(self, loop: asyncio.AbstractEventLoop) -> None:
        close_sdk_loop(loop, self.client)

    async def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the client; awaits (without blocking the caller's loop, which serves the hub)."""
        loop = self._loop
        if loop is not None and self._thread.is_alive():
            try:
                loop.call_soon_threadsafe(loop.stop)
            except RuntimeError:  # the loop closed meanwhile
                pass
        await asyncio.to_thread(self._thread.join, timeout_s)
        if self._thread.is_alive():
            raise RuntimeError("lark-ws thread did not stop")


def _main(argv: list[str]) -> None:
    domain, app_id, app_secret = argv

    def on_message(data: Any) -> None:
        print(f"event {data.header.event_id}", flush=True)  # before the ack goes out

    handler = (
        lark.EventDispatcherHandler.builder("", "")
        .register_p2_im_message_receive_v1(on_message)
        .build()
    )
    client = lark.ws.Client(
        app_id, app_secret, event_handler=handler, domain=domain, log_level=lark.LogLevel.WARNING
    )
    client.start()


if __name__ == "__main__":
    _main(sys.argv[1:])
