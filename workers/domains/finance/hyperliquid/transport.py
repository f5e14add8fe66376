"""Requests to Hyperliquid through the SDK's own `API` (requests-based, synchronous), run in
a small dedicated thread pool so the event loop never blocks on the network.

Why the SDK's `API` and not aiohttp: its `post` and `_handle_exception` are what every SDK
user's requests go through (the JSON body, the 4xx/5xx split, the non-JSON fallback), so the
emulator tests exercise the same client code a real deployment runs. Each pool thread keeps
its own `API` (a `requests.Session` is not shared across threads).

How failures read: an `/info` read that fails is `VenueUnavailable` (nothing is known). An
`/exchange` request whose fate is unknown (timeout, connection error, 5xx, 429, an answer
that is not JSON) is `VenueAmbiguous`: it may have landed, reconcile by its cloid. A 400/422
refuses the body before anything is processed: `Refused`, decisive.

Economy (economy.py, sharing.py): every request is counted against this process's weight
budget (reads wait for room, bounded); `read(body, max_age=..., spacing=...)` shares
identical reads; `info(body)` is a read no older than the call.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

import requests
from hyperliquid.api import API  # type: ignore[import-untyped]
from hyperliquid.utils.error import ClientError, ServerError  # type: ignore[import-untyped]

from workers.domains.finance.hyperliquid.economy import (
    IP_WEIGHT_PER_MIN,
    WeightBudget,
    exchange_weight,
    info_weight,
    items_weight,
)
from workers.domains.finance.hyperliquid.sharing import Read, SharedReads
from workers.domains.finance.venues.contract import VenueAmbiguous, VenueUnavailable

POOL_THREADS: Final = 4
DECISIVE_HTTP: Final = (400, 422)  # the body was refused before anything was processed


class Refused(Exception):
    """The venue refused the request's body outright (HTTP 400/422): nothing happened."""


class Transport:
    """POSTs to one base URL with a finite timeout; `close()` stops the pool."""

    def __init__(
        self, base_url: str, timeout_s: float, weight_per_min: int = IP_WEIGHT_PER_MIN
    ) -> None:
        self.base_url = base_url
        self._timeout_s = timeout_s
        self._local = threading.local()
        self._apis: list[Any] = []  # every thread's, closed with the pool
        self._pool = ThreadPoolExecutor(POOL_THREADS, thread_name_prefix="hyperliquid")
        self.budget = WeightBudget(weight_per_min)
        self.reads = SharedReads(self._fetch)

    def _api(self) -> Any:
        api = getattr(self._local, "api", None)
        if api is None:
            api = self._local.api = API(self.base_url, self._timeout_s)
            self._apis.append(api)
        return api

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        answer = self._api().post(path, body)
        if (
            isinstance(answer, dict)
            and set(answer) == {"error"}
            and str(answer["error"]).startswith("Could not parse JSON")
        ):
            raise _NotJson(answer["error"])
        return answer

    async def _run(self, path: str, body: dict[str, Any]) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._post, path, body)

    async def info(self, body: dict[str, Any], *, max_age: float = 0.0) -> Any:
        """An /info answer sent no longer than `max_age` s ago (0: after this call);
        VenueUnavailable when it fails."""
        return (await self.read(body, max_age=max_age)).answer

    async def read(
        self, body: dict[str, Any], *, max_age: float = 0.0, spacing: float = 0.0
    ) -> Read:
        """An /info answer with when its request was sent (shared: sharing.SharedReads)."""
        return await self.reads.read(body, max_age=max_age, spacing=spacing)

    def age(self, read: Read) -> float:
        """How many seconds ago `read`'s request was sent."""
        return self.reads.age(read)

    async def _fetch(self, body: dict[str, Any], mark_sent: Callable[[], None]) -> Any:
        await self.budget.read(str(body.get("type")), info_weight(body))
        mark_sent()
        answer = await self._info(body)
        self.budget.extra(items_weight(body, answer))
        return answer

    async def _info(self, body: dict[str, Any]) -> Any:
        try:
            return await self._run("/info", body)
        except ClientError as error:
            raise VenueUnavailable(
                f"Hyperliquid /info {body.get('type')} answered HTTP {error.status_code}: "
                f"{_short(error.error_message)}"
            ) from None
        except ServerError as error:
            raise VenueUnavailable(
                f"Hyperliquid /info {body.get('type')} answered HTTP {error.status_code}"
            ) from None
        except (requests.RequestException, _NotJson) as error:
            raise VenueUnavailable(
                f"Hyperliquid /info {body.get('type')} did not answer: {type(error).__name__}"
            ) from None

    async def exchange(self, payload: dict[str, Any]) -> Any:
        """One /exchange POST. VenueAmbiguous when it may or may not have landed."""
        kind = payload["action"].get("type")
        self.budget.action(exchange_weight(payload))
        try:
            return await self._run("/exchange", payload)
        except ClientError as error:
            if error.status_code in DECISIVE_HTTP:
                raise Refused(f"HTTP {error.status_code}: {_short(error.error_message)}") from None
            raise VenueAmbiguous(
                f"Hyperliquid answered the {kind} request with HTTP {error.status_code} "
                "after it was sent; reconcile by its cloid"
            ) from None
        except ServerError as error:
            raise VenueAmbiguous(
                f"Hyperliquid answered the {kind} request with HTTP {error.status_code}; it "
                "may have landed: reconcile by its cloid"
            ) from None
        except (requests.RequestException, _NotJson) as error:
            raise VenueAmbiguous(
                f"the {kind} request got no usable answer ({type(error).__name__}); it may "
                "have landed: reconcile by its cloid"
            ) from None

    async def close(self) -> None:
        await self.reads.close()
        await asyncio.to_thread(self._pool.shutdown, wait=True, cancel_futures=True)
        for api in self._apis:
            api.session.close()


class _NotJson(Exception):
    """The SDK's API read a body that is not JSON."""


def _short(text: Any) -> str:
    value = str(text)
    return value if len(value) <= 200 else value[:197] + "..."
