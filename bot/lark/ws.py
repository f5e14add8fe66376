"""Lark's long connection: the unmodified lark-oapi `ws.Client`, run beside the main loop.

Embedding (docs/lark-reference.md §2.8 mode D): a daemon thread creates its own loop, sets
`lark_oapi.ws.client.loop` to it (the SDK schedules on that module global) and only then builds
and starts the client. The global makes this one client per process (issue #119): `start()`
refuses a second running transport.

Data frames (docs/lark-reference.md §2.5): the SDK's sync handlers run one at a time, so a subclass
(`FrameClient`, bot/lark/ws_client.py) replaces the
async data-frame path. Each frame already is its own task on the SDK loop, so awaiting there
lets callbacks overlap and the store sets the pace (docs/architecture.md §4):

* `card.action.trigger` -> `port.on_callback(envelope, "ws")` on the main loop, awaited from the
  SDK loop without blocking it; its answer goes back in the ack frame
  `{"code": 200, "data": base64(JSON(answer))}`. If the consumer raises, answers something
  that is not a JSON object, or has not answered within its `transport_deadline_s` (2.7 s
  with the default budget; Lark allows 3 s), the ack carries the consumer's own "processing"
  toast (`port.callbacks.processing()`, en or zh) instead of a 500: the consumer may already
  have committed the claim and will patch the card. The consumer's coroutine is never
  cancelled by us, and the deadline is kept on the SDK loop, so a stuck main loop cannot
  make the ack late.
* any other event type -> `port.on_event(envelope, "ws")` scheduled on the main loop, acked
  `{"code": 200}` at once: a handler for every type, so nothing is re-pushed for lack of one.
* frames of `type=card` take the same path as `type=event` (the SDK drops them without an ack).
* `{"code": 500}` only when the payload is not a JSON object or the main loop is gone.
  Event-id replay is the consumers' job (in the store), not ours.

Watchdog (docs/lark-reference.md §2.6: the SDK can stay "connected to nothing"): a main-loop task checks every
second that the client has a socket and has seen a frame or pong within one ping interval plus
slack. Down for more than `watchdog_grace_s` -> state "disconnected"; for more than
`exit_after_s` (or the SDK thread died, e.g. a ClientException on bad credentials) ->
`on_fatal(reason)` once, and the server exits so a supervisor restarts it (crash-only).

`status()` (for health): state "connecting" (down, within the grace) | "connected" |
"disconnected"; connected_since and last_frame_at (ISO, UTC); reconnects (successful SDK
reconnects); watchdog {verdict ok|grace|down|fatal, down_for_s, reason, grace_s, exit_after_s}.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from types import ModuleType
from typing import TYPE_CHECKING, Any

from lark_oapi.core.enum import LogLevel  # type: ignore[import-untyped]

from bot.lark.ingress_port import (
    IngressPort,
    bounded_answer,
    event_id,
    is_callback,
)
from bot.lark.sdk_check import check_sdk
from kernel.canonical import MAX_ENVELOPE_DEPTH, too_deep

if TYPE_CHECKING:
    from bot.lark.ws_client import FrameClient

log = logging.getLogger("countersign.lark.ws")

DEFAULT_PING_INTERVAL_S = 120  # the SDK's local default, replaced by the server's ClientConfig
PONG_SLACK_S = 10.0  # a pong answers a ping within this, or the link is suspect
WATCHDOG_TICK_S = 1.0

# Ack payloads, as the SDK builds them (ws/client.py _handle_data_frame).
ACK_OK: dict[str, Any] = {"code": 200}
ACK_ERROR: dict[str, Any] = {"code": 500}


def _now_iso(wall: float) -> str:
    return datetime.fromtimestamp(wall, UTC).isoformat()


class WsTransport:
    """One lark-oapi long connection feeding an IngressPort on the main loop."""

    _running: WsTransport | None = None  # the SDK's module-global loop allows one per process
    _running_lock = threading.Lock()

    def __init__(
        self,
        app_id: str,
        app_secret: str,
        domain: str,
        port: IngressPort,
        main_loop: asyncio.AbstractEventLoop,
        *,
        watchdog_grace_s: float = 10.0,
        exit_after_s: float = 120.0,
        on_fatal: Callable[[str], None],
        sdk_log_level: str = "WARNING",  # INFO would log the connect URL with its ticket
        watchdog_tick_s: float = WATCHDOG_TICK_S,
        pong_slack_s: float = PONG_SLACK_S,
    ) -> None:
        self.app_id = app_id
        self._app_secret = app_secret
        self.domain = domain
        self.port = port
        self.main_loop = main_loop
        self.watchdog_grace_s = watchdog_grace_s
        self.exit_after_s = exit_after_s
        self.on_fatal = on_fatal
        self.watchdog_tick_s = watchdog_tick_s
        self.pong_slack_s = pong_slack_s
        self.sdk_log_level = LogLevel[sdk_log_level]

        self._thread: threading.Thread | None = None
        self._ws_loop: asyncio.AbstractEventLoop | None = None
        self._loop_ready = threading.Event()
        self._client: FrameClient | None = None
        self._error: BaseException | None = None  # what the SDK's start() raised, if anything
        self._stopping = False
        self._watchdog: asyncio.Task[None] | None = None
        self._fatal_reason: str | None = None

        # Written on the SDK thread, read on the main loop.
        self._lock = threading.Lock()
        self._connected_mono: float | None = None
        self._connected_wall: float | None = None
        self._down_since: float = time.monotonic()
        self._last_frame_mono: float | None = None
        self._last_frame_wall: float | None = None
        self._reconnects = 0

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the SDK thread and the watchdog. Call on the main loop. Raises `SdkMismatch`
        first if the installed lark-oapi lacks a private part `_Client` overrides."""
        check_sdk(self.sdk_log_level)
        # imported by the transport that starts, not with this module: the SDK's long
        # connection client reads every namespace's event processors (~15 MB), which the
        # worker child, importing the composition root, never uses
        from bot.lark import ws_client

        self._sdk: ModuleType = ws_client
        with WsTransport._running_lock:
            if WsTransport._running is not None:
                raise RuntimeError("a lark ws transport is already running in this process")
            if self._thread is not None:
                raise RuntimeError("this transport was already started")
            WsTransport._running = self
        self._down_since = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="lark-ws", daemon=True)
        self._thread.start()
        self._watchdog = self.main_loop.create_task(self._watch(), name="lark-ws-watchdog")

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        # before the client exists: the SDK schedules on this global
        self._sdk.lark_ws_client.loop = loop
        self._ws_loop = loop
        self._loop_ready.set()
        try:
            if not self._stopping:
                self._client = self._sdk.FrameClient(
                    self, self.app_id, self._app_secret, self.domain
                )
                self._client.start()  # blocks until stop() stops the loop, or raises
        except RuntimeError as error:
            if not self._stopping:  # else: "Event loop stopped before Future completed"
                self._error = error
                log.error("lark ws client ended: %s", error)
        except BaseException as error:  # ClientException (bad credentials, limit), ...
            self._error = error
            log.error("lark ws client ended: %s", error)
        finally:
            self._shutdown(loop)

    def _shutdown(self, loop: asyncio.AbstractEventLoop) -> None:
        self._sdk.close_sdk_loop(loop, self._client)

    async def stop(self, timeout_s: float = 10.0) -> bool:
        """Best effort (the SDK has no stop): stop its loop, cancel its tasks, close the socket.

        False if the thread is still alive after `timeout_s` (e.g. wedged in the SDK's
        timeout-less endpoint POST); it is a daemon thread, so process exit still ends it.
        """
        self._stopping = True
        if self._watchdog is not None:
            self._watchdog.cancel()
            try:
                await self._watchdog
            except asyncio.CancelledError:
                pass
        thread = self._thread
        stopped = True
        if thread is not None:
            await asyncio.to_thread(self._loop_ready.wait, timeout_s)
            deadline = time.monotonic() + timeout_s
            while thread.is_alive() and time.monotonic() < deadline:
                self._request_stop()
                # Repeated: the SDK's start() catches the RuntimeError of a stop during its first
                # connect and would otherwise go on reconnecting.
                await asyncio.to_thread(thread.join, 0.2)
            stopped = not thread.is_alive()
            if not stopped:
                log.warning("lark ws thread did not stop within %.0fs", timeout_s)
        with WsTransport._running_lock:
            if WsTransport._running is self:
                WsTransport._running = None
        return stopped

    def _request_stop(self) -> None:
        client, loop = self._client, self._ws_loop
        if client is not None:
            client._auto_reconnect = False  # closing the socket must not trigger a reconnect
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(loop.stop)
            except RuntimeError:  # closed meanwhile
                pass

    # -- frames (SDK thread) ----------------------------------------------------------------

    async def ack_for(self, payload: bytes) -> dict[str, Any]:
        try:
            # deeper than MAX_ENVELOPE_DEPTH could exhaust the recursion of the parser
            envelope = None if too_deep(payload, MAX_ENVELOPE_DEPTH) else json.loads(payload)
        except ValueError:  # also UnicodeDecodeError
            envelope = None
        if not isinstance(envelope, dict):
            log.error("data frame payload is not a JSON object; acked 500")
            return ACK_ERROR
        eid = event_id(envelope)
        if is_callback(envelope):
            coro = self.port.on_callback(envelope, "ws")
            try:
                pending = asyncio.run_coroutine_threadsafe(coro, self.main_loop)
            except RuntimeError:  # the main loop is closed: nobody can answer
                coro.close()
                log.error("callback %s arrived with the main loop closed; acked 500", eid)
                return ACK_ERROR
            answer = await bounded_answer(
                asyncio.wrap_future(pending), eid, "ws", self.port.callbacks
            )
            return {"code": 200, "data": base64.b64encode(answer).decode("ascii")}
        try:
            self.main_loop.call_soon_threadsafe(self._deliver_event, envelope)
        except RuntimeError:
            log.error("event %s arrived with the main loop closed; acked 500", eid)
            return ACK_ERROR  # Lark re-pushes, maybe to another replica
        return ACK_OK

    def _deliver_event(self, envelope: dict[str, Any]) -> None:  # main loop
        try:
            self.port.on_event(envelope, "ws")
        except Exception:
            log.exception("on_event failed for %s", event_id(envelope))

    def note_connected(self) -> None:
        with self._lock:
            self._connected_mono = time.monotonic()
            self._connected_wall = time.time()

    def note_disconnected(self) -> None:
        with self._lock:
            if self._connected_mono is not None:
                self._down_since = time.monotonic()
            self._connected_mono = None
            self._connected_wall = None

    def note_reconnected(self) -> None:
        with self._lock:
            self._reconnects += 1

    def note_frame(self) -> None:
        with self._lock:
            self._last_frame_mono = time.monotonic()
            self._last_frame_wall = time.time()

    # -- health (main loop) -----------------------------------------------------------------

    def _evaluate(self, now: float) -> tuple[str, float, str]:
        """(state, seconds down, reason) right now."""
        thread = self._thread
        client = self._client
        with self._lock:
            connected_at = self._connected_mono
            down_since = self._down_since
            last_frame = self._last_frame_mono
        if thread is not None and not thread.is_alive():
            reason = f"lark ws client ended: {self._error!r}" if self._error else "stopped"
            return "disconnected", now - down_since, reason
        if client is None or client._conn is None or connected_at is None:
            reason = "not connected" if self._reconnects or last_frame else "connecting"
            down = now - down_since
            return ("connecting" if down <= self.watchdog_grace_s else "disconnected"), down, reason
        ping = client._ping_interval  # adopted from the server's ClientConfig
        if not isinstance(ping, int | float) or ping <= 0:  # a ClientConfig without the field
            ping = DEFAULT_PING_INTERVAL_S
        # the SDK does not ping right after a reconnect, so count from the connect too
        alive_at = max(connected_at, last_frame or connected_at)
        stale_after = float(ping) + self.pong_slack_s
        if now - alive_at <= stale_after:
            return "connected", 0.0, ""
        down = now - (alive_at + stale_after)
        reason = f"no frame or pong for {now - alive_at:.0f}s on an open socket"
        return ("connecting" if down <= self.watchdog_grace_s else "disconnected"), down, reason

    def status(self) -> dict[str, Any]:
        now = time.monotonic()
        state, down, reason = self._evaluate(now)
        if self._fatal_reason is not None:
            verdict = "fatal"
        elif state == "connected":
            verdict = "ok"
        elif state == "connecting":
            verdict = "grace"
        else:
            verdict = "down"
        with self._lock:
            connected_wall = self._connected_wall
            last_frame_wall = self._last_frame_wall
            reconnects = self._reconnects
        return {
            "transport": "ws",
            "state": state,
            "connected_since": (
                _now_iso(connected_wall) if state == "connected" and connected_wall else None
            ),
            "last_frame_at": _now_iso(last_frame_wall) if last_frame_wall else None,
            "reconnects": reconnects,
            "watchdog": {
                "verdict": verdict,
                "down_for_s": round(down, 1),
                "reason": self._fatal_reason or reason or None,
                "grace_s": self.watchdog_grace_s,
                "exit_after_s": self.exit_after_s,
            },
        }

    async def _watch(self) -> None:
        try:
            await self._watch_until_fatal()
        except asyncio.CancelledError:
            raise
        except Exception:  # a watchdog that dies silently would hide a deaf client forever
            log.exception("lark ws watchdog failed")
            self._fatal("lark ws watchdog failed")

    async def _watch_until_fatal(self) -> None:
        previous = ""
        while not self._stopping:
            state, down, reason = self._evaluate(time.monotonic())
            if state != previous:
                level = logging.WARNING if state == "disconnected" else logging.INFO
                log.log(level, "lark long connection %s%s", state, f" ({reason})" if reason else "")
                previous = state
            thread_died = self._thread is not None and not self._thread.is_alive()
            if thread_died:
                self._fatal(reason)
                return
            if down > self.exit_after_s:
                self._fatal(f"disconnected for {down:.0f}s: {reason}")
                return
            await asyncio.sleep(self.watchdog_tick_s)

    def _fatal(self, reason: str) -> None:
        self._fatal_reason = reason
        log.critical("lark long connection watchdog: %s", reason)
        try:
            self.on_fatal(reason)
        except Exception:
            log.exception("on_fatal raised")
