"""The Python helper tests use: start a sandbox in-process, or drive one through its control API.

running = await start(port)                  # demo universe unless a Venue is given
await running.add_account(address, "10000")
await running.approve_agent(address, agent_address)
await running.set_mark("BTC", "61000")
await running.fault("delay_commit", count=1)
await running.requests_seen(cloid)
await running.stop()
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import aiohttp
from aiohttp import web

from hlsandbox.app import FAULTS_KEY, VENUE_KEY, build_app
from hlsandbox.control import PREFIX
from hlsandbox.faults import Faults
from hlsandbox.state import Venue


class ControlError(RuntimeError):
    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"control API answered {status}: {body}")
        self.status, self.body = status, body


@dataclass
class HlSandboxClient:
    """The control API of a sandbox at `base_url` (in this process or another)."""

    base_url: str
    _http: aiohttp.ClientSession | None = field(default=None, repr=False)

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        if self._http is None:
            self._http = aiohttp.ClientSession()
        params = body if method == "GET" else None
        payload = None if method == "GET" else (body or {})
        url = f"{self.base_url}{PREFIX}{path}"
        async with self._http.request(method, url, json=payload, params=params) as response:
            answer = await response.json()
            if response.status != 200:
                raise ControlError(response.status, answer)
            return answer

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def state(self) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("GET", "/state")
        return result

    async def add_account(self, address: str, usdc: Decimal | str) -> dict[str, Any]:
        result: dict[str, Any] = await self.call(
            "POST", "/accounts", {"address": address, "usdc": str(usdc)}
        )
        return result

    async def approve_agent(self, account: str, agent_address: str) -> None:
        await self.call("POST", "/agents", {"account": account, "agent": agent_address})

    async def remove_agent(self, agent_address: str) -> None:
        await self.call("DELETE", f"/agents/{agent_address}")

    async def set_mark(self, coin: str, px: Decimal | str) -> int:
        fills: int = (await self.call("POST", "/marks", {"coin": coin, "px": str(px)}))["fills"]
        return fills

    async def set_liquidity(self, coin: str, sz: Decimal | str | None) -> None:
        await self.call("POST", "/liquidity", {"coin": coin, "sz": None if sz is None else str(sz)})

    async def set_fees(self, maker: str, taker: str) -> None:
        await self.call("POST", "/fees", {"maker": maker, "taker": taker})

    async def set_limits(self, **limits: int) -> None:
        await self.call("POST", "/limits", limits)

    async def fault(
        self, kind: str, count: int = 1, *, delay_ms: int | None = None, close: bool = False
    ) -> None:
        body = {"kind": kind, "count": count, "delay_ms": delay_ms, "close": close}
        await self.call("POST", "/faults", body)

    async def clear_faults(self) -> None:
        await self.call("DELETE", "/faults")

    async def release(self) -> int:
        released: int = (await self.call("POST", "/release"))["released"]
        return released

    async def advance(self, ms: int) -> int:
        now: int = (await self.call("POST", "/clock", {"advance_ms": ms}))["now_ms"]
        return now

    async def tick(self) -> int:
        fills: int = (await self.call("POST", "/tick"))["fills"]
        return fills

    async def requests(self, cloid: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("GET", "/requests", {"cloid": cloid})
        return result

    async def requests_seen(self, cloid: str) -> int:
        """How many /exchange order requests naming `cloid` arrived (whatever became of them)."""
        return int((await self.requests(cloid))["received"])

    async def committed(self, cloid: str) -> int:
        """Of those, how many landed (passed signature and nonce and were applied)."""
        return int((await self.requests(cloid))["committed"])


@dataclass
class RunningSandbox(HlSandboxClient):
    """A sandbox served by this process: its control API plus its state, for assertions."""

    runner: web.AppRunner | None = field(default=None, repr=False)
    app: web.Application | None = field(default=None, repr=False)

    @property
    def venue(self) -> Venue:
        assert self.app is not None
        return self.app[VENUE_KEY]

    @property
    def faults(self) -> Faults:
        assert self.app is not None
        return self.app[FAULTS_KEY]

    async def stop(self) -> None:
        await self.close()
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None


async def start(port: int, host: str = "127.0.0.1", venue: Venue | None = None) -> RunningSandbox:
    """Serve a sandbox on host:port in this event loop (`stop()` it)."""
    app = build_app(venue)
    runner = web.AppRunner(app, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return RunningSandbox(f"http://{host}:{port}", runner=runner, app=app)
