"""What the API's handlers and middlewares share: the app's and the request's keys."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from bot.api.auth import ProposerAuth, RateLimiter
from bot.api.health import Health
from bot.config import Config, Proposer
from store.authority import Store

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
PROPOSER_KEY = web.RequestKey("proposer", Proposer)
HOSTS_KEY = web.AppKey("hosts", frozenset)
# The cancel route's name: a cancel draws on its own rate bucket (bot/api/middlewares.py).
CANCEL_ROUTE = "cancel_operation"
