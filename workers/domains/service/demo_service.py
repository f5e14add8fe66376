"""The demo's billing service: a loopback aiohttp app that books a refund only on a call
`receiver.py` verified, once per Idempotency-Key, and answers its status. In memory: the
demo starts it afresh each run (examples/service/app.py is the documented, durable one)."""

from __future__ import annotations

import asyncio
import json
import socket
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from workers.domains.service.receiver import FENCE_PARAM, MemorySeenKeys, receive, status

CALL_PATH = "/countersign/call"
STATUS_PATH = "/countersign/status"


@dataclass
class DemoBilling:
    secret: str
    seen: MemorySeenKeys = field(default_factory=MemorySeenKeys)
    refunds: dict[str, str] = field(default_factory=dict)  # order id -> the key that booked it

    async def call(self, request: web.Request) -> web.Response:
        verdict = receive(self.secret, request.headers, await request.read(), self.seen)
        if verdict.answer is not None:  # refused, or this call's stored answer
            return _answer(*verdict.answer)
        assert verdict.call is not None and verdict.key is not None
        code, answer = self._refund(verdict.key, verdict.call.get("arguments") or {})
        body = json.dumps(answer, sort_keys=True).encode()
        self.seen.finish(verdict.key, code, body)
        return _answer(code, body)

    def _refund(self, key: str, arguments: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        order_id = str(arguments.get("order_id"))
        if order_id in self.refunds:
            return 409, {"message": f"order {order_id} was already refunded"}
        self.refunds[order_id] = key
        return 200, {"refund_id": f"rf_{key[-10:]}", "order_id": order_id, "booked": True}

    async def status(self, request: web.Request) -> web.Response:
        key = request.query.get("idempotency_key", "")
        fence = request.query.get(FENCE_PARAM) == "1"
        return _answer(*status(self.secret, request.headers, key, self.seen, fence=fence))


def _answer(code: int, body: bytes) -> web.Response:
    return web.Response(status=code, body=body, content_type="application/json")


async def serve(billing: DemoBilling, sock: socket.socket, stop: asyncio.Event) -> None:
    """Serve on `sock` (bound by the caller, so its port is known first) until `stop`."""
    app = web.Application()
    app.router.add_post(CALL_PATH, billing.call)
    app.router.add_get(STATUS_PATH, billing.status)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
