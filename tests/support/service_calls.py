"""service.call's test world: the example billing service (examples/service) on loopback, the
[domains.service] table naming it, and proposals of its refund action."""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from examples.service.app import CALL_PATH, STATUS_PATH, Billing, SqliteSeenKeys, build_app
from store import Claimed, Click, Operation, Store
from tests.support.factories import draft
from workers.domains import DOMAINS
from workers.domains.base import RunnerContext
from workers.domains.service.examples import REFUND, REFUND_ARGUMENTS
from workers.domains.service.settings import ServiceSettings

SECRET = "billing-test-secret-0123456789abcdef"
SECRET_ENV = "COUNTERSIGN_TEST_BILLING_SECRET"
KIND = "service.call"
_counter = itertools.count()


@dataclass(frozen=True)
class Heard:
    """One request the service answered."""

    method: str
    path: str
    query: dict[str, str]
    status: int


@dataclass
class Hearing:
    """Every request the service answered, in order; a test awaits answers, never sleeps."""

    heard: list[Heard] = field(default_factory=list)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    def middleware(self) -> Any:
        @web.middleware
        async def record(request: web.Request, handler: Any) -> web.StreamResponse:
            response: web.StreamResponse = await handler(request)
            async with self.changed:
                self.heard.append(
                    Heard(request.method, request.path, dict(request.query), response.status)
                )
                self.changed.notify_all()
            return response

        return record


@dataclass
class BillingService:
    """The example service, in this process: what it received and what it booked."""

    billing: Billing
    base_url: str
    hearing: Hearing = field(default_factory=Hearing)

    @property
    def call_url(self) -> str:
        return f"{self.base_url}{CALL_PATH}"

    @property
    def status_url(self) -> str:
        return f"{self.base_url}{STATUS_PATH}"

    def posts(self) -> list[dict[str, Any]]:
        """Every call POSTed to it (verified or not), its body parsed."""
        return [
            {"headers": post["headers"], "body": json.loads(post["body"])}
            for post in self.billing.received
        ]

    def refunds(self) -> list[dict[str, Any]]:
        return self.billing.keys.refunds()

    def answered(self, path: str) -> list[Heard]:
        """The requests on `path` answered so far."""
        return [heard for heard in self.hearing.heard if heard.path == path]

    async def answers(self, path: str, count: int, timeout_s: float = 10.0) -> list[Heard]:
        """The first `count` requests on `path`, once all are answered."""

        async def enough() -> list[Heard]:
            async with self.hearing.changed:
                await self.hearing.changed.wait_for(lambda: len(self.answered(path)) >= count)
                return self.answered(path)[:count]

        return await asyncio.wait_for(enough(), timeout_s)


class Hold:
    """The service's delay hook: its first `count` calls wait, between their arrival and their
    verification (a slow network), until `release` is set."""

    def __init__(self, count: int = 1) -> None:
        self.left = count
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self) -> None:
        if self.left <= 0:
            return
        self.left -= 1
        self.arrived.set()
        await self.release.wait()


@asynccontextmanager
async def billing_service(workdir: Path, secret: str = SECRET) -> AsyncIterator[BillingService]:
    billing = Billing(secret, SqliteSeenKeys(workdir / f"billing-{next(_counter)}.db"))
    hearing = Hearing()
    app = build_app(billing)
    app.middlewares.append(hearing.middleware())
    # not aiohttp's TestServer: it cancels a handler whose caller hung up, where a deployed
    # service (web.run_app) goes on running it, as a call arriving late must be shown to
    runner = web.AppRunner(app)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    await web.SockSite(runner, sock).start()
    try:
        yield BillingService(billing, f"http://127.0.0.1:{port}", hearing)
    finally:
        if isinstance(billing.delay, Hold):  # a call still held would hold up the close
            billing.delay.release.set()
        await runner.cleanup()


def service_table(
    service: BillingService | None,
    *,
    status: bool = True,
    idempotent: bool = False,
    audience: str | None = "ops",
    endpoint: str | None = None,
) -> dict[str, Any]:
    """A [domains.service] table with one service, `billing`, and its `refund` action."""
    base = service.base_url if service is not None else "http://127.0.0.1:9"
    billing: dict[str, Any] = {
        "name": "billing",
        "endpoint": endpoint or f"{base}{CALL_PATH}",
        "secret_env": SECRET_ENV,
        "idempotent": idempotent,
        "allow_internal": True,  # the example runs on loopback
        "timeout_s": 2.0,
        "actions": [
            {
                "name": "refund",
                "title": "Refund",
                "title_zh": "退款",
                "arguments": copy.deepcopy(REFUND_ARGUMENTS),
            }
        ],
    }
    if audience is not None:
        billing["audience"] = audience
    if status:
        billing["status_endpoint"] = f"{base}{STATUS_PATH}"
    return {"services": [billing]}


def settings_of(table: Mapping[str, Any]) -> ServiceSettings:
    return ServiceSettings.model_validate(table)


def refund(**arguments: Any) -> dict[str, Any]:
    payload = copy.deepcopy(REFUND)
    payload["arguments"].update(arguments)
    return payload


def refund_request(request_id: str | None = None, **arguments: Any) -> dict[str, Any]:
    return {
        "request_id": request_id or f"svc-{next(_counter)}",
        "kind": KIND,
        "payload": refund(**arguments),
        "audience": "ops",
    }


def draft_fields(settings: ServiceSettings, payload: Mapping[str, Any]) -> dict[str, Any]:
    """What intake would file for `payload` (through the registry's handle, as intake does)."""
    plugin = DOMAINS[KIND]
    model = plugin.schema(1)
    assert model is not None
    call = model.model_validate(payload)
    assert plugin.admit(call, settings) == []
    projection = plugin.project(call)
    additions = plugin.preconditions(call, settings, None)
    projection = {**projection, **additions, "terms": projection["terms"] + additions["terms"]}
    return {
        "kind": KIND,
        "executor_name": plugin.executor_name,
        "executor_revision": plugin.executor_revision,
        "simulated": plugin.simulated,
        "payload": dict(payload),
        "projection": projection,
        "target_ref": plugin.target_ref(call),
    }


async def claimed_call(
    store: Store, settings: ServiceSettings, payload: Mapping[str, Any]
) -> Operation:
    """A service call filed, its card sent, and confirmed by Alice."""
    proposed = await store.propose(draft(**draft_fields(settings, payload)))
    op = await store.mark_card_sent(proposed.operation.id, f"om_{proposed.operation.id}")
    result = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(result, Claimed)
    return result.operation


def runner_context(
    clock: Callable[[], datetime],
    *,
    environ: Mapping[str, str] | None = None,
    decision_of: Callable[[str], Awaitable[str | None]] | None = None,
) -> RunnerContext:
    async def no_decision(_operation_id: str) -> str | None:
        return None

    async def no_wake(_ids: object) -> None:
        return None

    return RunnerContext(
        clock=clock,
        environ={SECRET_ENV: SECRET} if environ is None else environ,
        decision_of=decision_of or no_decision,
        on_dispatched=lambda _client_id: None,
        wake=no_wake,
        people={"ou_alice": "Alice", "ou_bob": "Bob"},
    )
