"""The server side of Lark's long connection, as the unmodified lark-oapi `ws.Client` expects it.

`LongConnHub` owns the endpoint and connect routes, the single-use tickets, the connections of
each app and which of them gets a push. The wire pieces it speaks (paths, codes, frames, acks,
`ClientConfig`, error responses) are in larksandbox/longconn_wire.py.

Protocol (docs/lark-reference.md §2; lark_oapi 1.7.5 `ws/client.py`):

1. `POST /callback/ws/endpoint` `{"AppID", "AppSecret"}` -> `{"code": 0, "data": {"URL",
   "ClientConfig"}}`. The URL carries `device_id` and `service_id` (the SDK reads both) and a
   single-use `ticket` (ours; it binds the websocket to the app that proved its secret).
2. The websocket carries binary pbbp2 `Frame`s. CONTROL (method 0): the client pings, we pong with
   the ClientConfig JSON as payload. DATA (method 1): we push `type=event|card` frames with headers
   type/message_id/trace_id/sum/seq; the client echoes the frame back as the ack with the payload
   replaced by `{"code": 200|500, "data": base64(answer)?}` and a `biz_rt` header (handler ms).
3. Lark's delivery rule (§2.7): each push goes to exactly one connected client of the app,
   picked at random ("random", the default); "round_robin" takes them in turn, for tests that
   need to know which client gets what.

Everything here runs on the aiohttp event loop; there are no threads.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import secrets
import time
from dataclasses import dataclass, field
from typing import Literal

from aiohttp import WSMsgType, web

from larksandbox.longconn_wire import (
    CODE_BAD_CREDENTIALS,
    CODE_BAD_TICKET,
    CODE_EXCEED_CONN_LIMIT,
    CODE_SYSTEM_BUSY,
    CODE_UNKNOWN_APP,
    CONNECT_PATH,
    ENDPOINT_PATH,
    MAX_FRAGMENT_BYTES,
    METHOD_CONTROL,
    METHOD_DATA,
    Ack,
    ClientConfig,
    build_data_frames,
    build_pong,
    handshake_error,
    lark_error,
    parse_ack,
    parse_frame,
)
from larksandbox.state import SandboxState

log = logging.getLogger(__name__)

TICKET_TTL_S = 60.0
CLOSE_TIMEOUT_S = 2.0  # waiting for the client's close reply; a busy SDK loop may never send one


class NoConnection(Exception):
    """No client of that app is connected."""


Dispatch = Literal["round_robin", "random"]
DISPATCH_MODES: tuple[str, ...] = ("round_robin", "random")


@dataclass(frozen=True)
class _Ticket:
    app_id: str
    device_id: str
    service_id: int
    expires_at: float


@dataclass(eq=False)
class _Conn:
    app_id: str
    device_id: str
    service_id: int
    ws: web.WebSocketResponse
    live: bool = False  # handshake done and not dropped: eligible for pushes
    dropped: bool = False
    pending: dict[str, asyncio.Future[Ack | None]] = field(default_factory=dict)


class LongConnHub:
    def __init__(
        self,
        state: SandboxState,
        *,
        dispatch: Dispatch = "random",
        fragment_bytes: int = 64 * 1024,
        client_config: ClientConfig | None = None,
        max_connections_per_app: int = 50,
        rng: random.Random | None = None,
    ) -> None:
        if not 0 < fragment_bytes <= MAX_FRAGMENT_BYTES:
            raise ValueError(f"fragment_bytes must be in 1..{MAX_FRAGMENT_BYTES}")
        self.state = state
        self.dispatch = dispatch
        self.fragment_bytes = fragment_bytes
        self.client_config = client_config or ClientConfig()
        self.max_connections_per_app = max_connections_per_app
        self._conns: dict[str, list[_Conn]] = {}  # per app, in connect order, incl. handshaking
        self._round_robin: dict[str, int] = {}
        self._random = rng or random.Random()
        self._tickets: dict[str, _Ticket] = {}
        self._seq_ids = itertools.count(1)
        self._closed = False

    @property
    def dispatch(self) -> str:
        return self._dispatch

    @dispatch.setter
    def dispatch(self, value: str) -> None:
        if value not in DISPATCH_MODES:
            raise ValueError(f"dispatch must be one of {DISPATCH_MODES}, not {value!r}")
        self._dispatch = value

    # -- routes -----------------------------------------------------------------------------

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post(ENDPOINT_PATH, self._endpoint)
        app.router.add_get(CONNECT_PATH, self._connect)

        # Websocket handlers only end when their socket closes; closing them in on_shutdown keeps
        # the runner's graceful shutdown from waiting out its timeout.
        async def on_shutdown(_app: web.Application) -> None:
            await self.close()

        app.on_shutdown.append(on_shutdown)

    async def _endpoint(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
            app_id = str(body.get("AppID") or "")
            secret = str(body.get("AppSecret") or "")
        except (ValueError, AttributeError):
            return web.json_response({"code": 400, "msg": "invalid request body"}, status=400)
        if self._closed:
            return lark_error(CODE_SYSTEM_BUSY, "system busy")  # retried by the SDK
        app = self.state.apps.get(app_id)
        if app is None:
            return lark_error(CODE_UNKNOWN_APP, "Incorrect domain name")
        # Assertion mode (AppSecret "" + ClientAssertion) is not supported: it fails here too.
        if not secrets.compare_digest(secret.encode(), app.app_secret.encode()):
            return lark_error(CODE_BAD_CREDENTIALS, "app_id or app_secret is invalid")

        now = time.monotonic()  # not state.now(): tests shift the sandbox clock by days
        for key in [k for k, t in self._tickets.items() if t.expires_at <= now]:
            del self._tickets[key]
        ticket = _Ticket(
            app_id=app_id,
            device_id=str(secrets.randbits(62)),
            service_id=secrets.randbelow(2**31 - 1) + 1,  # Frame.service is an int32
            expires_at=now + TICKET_TTL_S,
        )
        key = secrets.token_urlsafe(24)
        self._tickets[key] = ticket
        scheme = "wss" if request.secure else "ws"
        url = (
            f"{scheme}://{request.host}{CONNECT_PATH}?device_id={ticket.device_id}"
            f"&service_id={ticket.service_id}&ticket={key}"
        )
        return web.json_response(
            {
                "code": 0,
                "msg": "ok",
                "data": {"URL": url, "ClientConfig": self.client_config.to_lark()},
            }
        )

    async def _connect(self, request: web.Request) -> web.StreamResponse:
        ticket = self._tickets.pop(request.query.get("ticket", ""), None)
        if (
            self._closed
            or ticket is None
            or ticket.expires_at <= time.monotonic()
            or request.query.get("device_id") != ticket.device_id
            or request.query.get("service_id") != str(ticket.service_id)
        ):
            return handshake_error(CODE_BAD_TICKET, "invalid or expired ticket")
        conns = self._conns.setdefault(ticket.app_id, [])
        # Checked at the handshake, where the SDK expects it; connections still handshaking count,
        # so a burst of connects cannot overshoot the limit.
        if len(conns) >= self.max_connections_per_app:
            return handshake_error(CODE_EXCEED_CONN_LIMIT, "exceed connection limit")

        # compress=False: the SDK offers permessage-deflate; declining keeps every send
        # synchronous (aiohttp compresses big frames in an executor thread).
        ws = web.WebSocketResponse(compress=False, timeout=CLOSE_TIMEOUT_S)
        conn = _Conn(ticket.app_id, ticket.device_id, ticket.service_id, ws)
        conns.append(conn)
        try:
            await ws.prepare(request)
            if conn.dropped:  # disconnect()/close() came during the handshake
                await ws.close()
                return ws
            conn.live = True
            self.state.publish({"type": "connection", "app_id": conn.app_id})
            log.debug("long connection %s of %s open", conn.device_id, conn.app_id)
            async for msg in ws:
                if msg.type is WSMsgType.BINARY:
                    await self._on_frame(conn, msg.data)
                # The protocol is binary frames only; anything else is ignored.
        finally:
            self._drop(conn)
            log.debug("long connection %s of %s closed", conn.device_id, conn.app_id)
        return ws

    async def _on_frame(self, conn: _Conn, data: bytes) -> None:
        frame = parse_frame(data)
        if frame is None:  # a broken frame must not end the connection
            log.warning("undecodable frame on %s", conn.device_id)
            return
        headers = {h.key: h.value for h in frame.headers}
        if frame.method == METHOD_CONTROL:
            if headers.get("type") == "ping":
                await self._send(conn, [build_pong(frame.service, self.client_config)])
            return
        if frame.method != METHOD_DATA:
            return
        waiter = conn.pending.get(headers.get("message_id", ""))
        if waiter is None or waiter.done():
            return  # an ack after the push gave up (timeout) or of a message we never sent
        ack = parse_ack(bytes(frame.payload), headers.get("biz_rt"))
        if ack is None:
            log.warning("malformed ack on %s: %r", conn.device_id, bytes(frame.payload)[:200])
            return  # treated as no ack: the push times out
        waiter.set_result(ack)

    # -- connections ------------------------------------------------------------------------

    def connected(self, app_id: str) -> int:
        return sum(1 for c in self._conns.get(app_id, ()) if c.live)

    def _drop(self, conn: _Conn) -> None:
        """Forget a connection at once; its in-flight pushes resolve to None (no ack)."""
        if conn.live:
            self.state.publish({"type": "connection", "app_id": conn.app_id})
        conn.live = False
        conn.dropped = True
        conns = self._conns.get(conn.app_id)
        if conns is not None and conn in conns:
            conns.remove(conn)
            if not conns:
                del self._conns[conn.app_id]
        for waiter in conn.pending.values():
            if not waiter.done():
                waiter.set_result(None)

    async def _close_all(self, conns: list[_Conn]) -> None:
        for conn in conns:
            self._drop(conn)
        prepared = [c for c in conns if c.ws.prepared]
        await asyncio.gather(
            *(c.ws.close(code=1000, message=b"closed by sandbox") for c in prepared),
            return_exceptions=True,
        )

    async def disconnect(self, app_id: str) -> int:
        """Close all of the app's connections (the SDK then reconnects by itself)."""
        conns = list(self._conns.get(app_id, ()))
        live = sum(1 for c in conns if c.live)
        await self._close_all(conns)
        return live

    async def close(self) -> None:
        self._closed = True
        self._tickets.clear()
        await self._close_all([c for conns in self._conns.values() for c in conns])

    # -- pushing ----------------------------------------------------------------------------

    def _pick(self, app_id: str) -> _Conn:
        live = [c for c in self._conns.get(app_id, ()) if c.live]
        if not live:
            raise NoConnection(app_id)
        if self._dispatch == "random":
            return self._random.choice(live)
        turn = self._round_robin.get(app_id, 0)
        self._round_robin[app_id] = turn + 1
        return live[turn % len(live)]

    async def _send(self, conn: _Conn, frames: list[bytes]) -> bool:
        try:
            for data in frames:
                await conn.ws.send_bytes(data)
        except (ConnectionError, RuntimeError) as error:  # closing transport / not prepared
            log.debug("send on %s failed: %s", conn.device_id, error)
            return False
        return True

    async def push(
        self, app_id: str, payload: bytes, *, frame_type: str = "event", timeout_s: float = 3.0
    ) -> Ack | None:
        """Send one message to exactly one client of the app; its ack, or None without one.

        Raises NoConnection if no client of the app is connected. Pushes never wait for each
        other: each has its own waiter keyed by message_id on the chosen connection.
        """
        conn = self._pick(app_id)
        message_id = secrets.token_hex(16)
        frames = build_data_frames(
            payload,
            message_id=message_id,
            trace_id=secrets.token_hex(16),
            frame_type=frame_type,
            service_id=conn.service_id,
            fragment_bytes=self.fragment_bytes,
            seq_ids=self._seq_ids,
        )
        waiter: asyncio.Future[Ack | None] = asyncio.get_running_loop().create_future()
        conn.pending[message_id] = waiter
        try:
            async with asyncio.timeout(timeout_s):
                if not await self._send(conn, frames):
                    return None
                return await waiter
        except TimeoutError:
            return None
        finally:
            conn.pending.pop(message_id, None)


__all__ = [
    "LongConnHub",
    "NoConnection",
]
