"""What the API's handlers and middlewares share: the app's and the request's keys."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from bot.api.auth import ProposerAuth, RateLimiter
from bot.api.health import Health
from bot.config import Config, Proposer
from store import Store

CONFIG_KEY = web.AppKey("config", Config)
STORE_KEY = web.AppKey("store", Store)
AUTH_KEY = web.AppKey("auth", ProposerAuth)
LIMITER_KEY = web.AppKey("limiter", RateLimiter)
PEER_LIMITER_KEY = web.AppKey("peer_limiter", RateLimiter)
HEALTH_KEY = web.AppKey("health", Health)
ON_PROPOSED_KEY: web.AppKey[Callable[[], None]] = web.AppKey("on_proposed")
# kind -> a read of its adapter's capabilities (what it could ever execute)
CapabilityReaders = Mapping[str, Callable[[], Awaitable[Any]]]
CAPABILITIES_KEY: web.AppKey[CapabilityReaders] = web.AppKey("capabilities")
# kind -> the pre-check a payload meets at filing (and in the check endpoint's dry run): its
# field problems; raises ReadingUnavailable when the venue could not be read
PrecheckReaders = Mapping[str, Callable[[Mapping[str, Any]], Awaitable[Any]]]
PRECHECKS_KEY: web.AppKey[PrecheckReaders] = web.AppKey("prechecks")
PROPOSER_KEY = web.RequestKey("proposer", Proposer)
HOSTS_KEY = web.AppKey("hosts", frozenset)
# The cancel route's name: a cancel draws on its own rate bucket (bot/api/middlewares.py).
CANCEL_ROUTE = "cancel_operation"
# Set as the server begins to stop: a long wait (the dashboard's long poll, the API's wait_s)
# answers at once instead of holding a restart up to its full length.
STOPPING_KEY = web.AppKey("stopping", asyncio.Event)


async def pause(stopping: asyncio.Event | None, seconds: float) -> bool:
    """Sleep `seconds`, or less if the server begins to stop; True: it is stopping."""
    if stopping is None:  # a wait outside a server (a direct call)
        await asyncio.sleep(seconds)
        return False
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), seconds)
    return stopping.is_set()
