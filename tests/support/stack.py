"""The real bot against the real sandbox, in-process: fixtures that read like the product.

The bot runs in-process through `bot.app.server.serve` (its lark-oapi ws client in its own
thread, as in production); the sandbox runs on the same loop; the store is the test
backend. Tests propose through the HTTP API and click through the sandbox control API.
The `make_stack` and `stack` fixtures are exposed by tests/e2e/conftest.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from bot.app.devstack import SandboxApp, point_webhooks, register_sign_in
from bot.app.server import serve
from bot.config import Config, parse, resolve
from bot.config.policy import policy_digests
from kernel.timeutil import utc_now
from larksandbox import (
    DEFAULT_APP_ID,
    HUB_KEY,
    ClientConfig,
    Hub,
    SandboxOptions,
    SandboxState,
    answers,
    build_sandbox,
    default_state,
    events,
)
from store import AutoRules, State, Store
from tests.support.backends import Backend
from tests.support.processes import free_port
from tests.support.sandbox import TEST_URL_VERIFY_TIMEOUT_S
from tests.support.waiting import eventually, scaled
from workers.auto_send import auto_send_rules

DEV_TOKEN = "e2e-dev-token-123456"
OTHER_TOKEN = "e2e-other-token-654321"
CALLBACK_SECRET = "e2e-callback-secret-0123456789"
OPS_AUDIENCE = {"name": "ops", "chat_id": "oc_ops", "operators": ["ou_alice", "ou_bob"]}
# a confirmed operation: claimed, or already executed by the time a test looks
CLAIMED_OR_AFTER = frozenset({State.CLAIMED, State.OUTCOME_OBSERVED})


@dataclass
class ShiftableClock:
    offset: timedelta = field(default_factory=timedelta)
    # set: time stands still there (plus the offset), so "not yet due" cannot run out
    # while a slow machine works
    frozen_at: datetime | None = None

    def __call__(self) -> datetime:
        return (self.frozen_at or utc_now()) + self.offset

    def freeze(self) -> None:
        self.frozen_at, self.offset = self(), timedelta()


# Quick looks so tests see outcomes promptly; the timeouts keep their production order.
FAST_EXECUTION = {
    # in the test's own process, where its fault hooks and crash points are; the worker
    # process has tests of its own (test_worker_process.py)
    "workers": "inline",
    "poll_s": 0.2,
    "submit_timeout_s": 2.0,
    "not_found_after_s": 4.0,
    "track_max_s": 2.0,
    "venue_tick_s": 0.2,
}


ACME_DESTINATION: dict[str, Any] = {
    "name": "acme",
    "chat_id": "oc_acme",
    "counterparty": "acme-supplier",
    "ops_chat_id": "oc_ops",
}


def bot_config(
    backend: Backend,
    port: int,
    sandbox: SandboxApp,
    mode: str,
    *,
    venue_path: Path,
    execution: dict[str, Any] | None = None,
    sim_faults: str = "",
    audiences: list[dict[str, Any]] | None = None,
    deliveries: dict[str, Any] | None = None,
    cards: dict[str, Any] | None = None,
    approval_rules: list[dict[str, Any]] | None = None,
    people: dict[str, str] | None = None,
    web: dict[str, Any] | None = None,
    destinations: list[dict[str, Any]] | None = None,
    domains: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
    audit: dict[str, Any] | None = None,
    **lark: Any,
) -> Config:
    # `domains`: more domain tables, or one replacing the default (a finance table with a
    # Hyperliquid account); `environ`: secrets those tables name (an agent key's variable)
    # `web`: sign in with Lark on, the sandbox as Lark, plus these [web] settings
    signing_in = {
        "sign_in": True,
        "public_url": f"http://127.0.0.1:{port}",
        "lark_authorize_url": f"{sandbox.base_url}/open-apis/authen/v1/authorize",
    }
    settings = parse(
        {
            "store": {"url": backend.url, **({"schema": backend.schema} if backend.schema else {})},
            "http": {
                "port": port,
                "proposer_rate_per_s": 1000,
                "proposer_burst": 1000,
                # /readyz's store counts follow the store within a fraction of a second
                "summary_period_s": 0.2,
            },
            "lark": {
                "mode": mode,
                "app_id": sandbox.app_id,
                "tenant_keys": [sandbox.tenant_key],
                "base_url": sandbox.base_url,
                **lark,
            },
            "audiences": audiences or [OPS_AUDIENCE],
            "approval_rules": approval_rules or [],
            # UTC unless a test names a zone: the default ("local", the machine's) varies
            "cards": {"timezone": "UTC", **(cards or {})},
            "people": people or {},
            "web": {**signing_in, **web} if web is not None else {},
            # no daily head line in the ops chat unless a test asks (a shifted clock could
            # otherwise cross its time and add a message to a chat a test counts)
            "audit": audit if audit is not None else {"witness": False},
            "proposers": [
                {
                    "name": "dev-agent",
                    "token_env": "E2E_DEV_TOKEN",
                    "callback_secret_env": {"dev": "E2E_CALLBACK_SECRET"},
                },
                {"name": "other-agent", "token_env": "E2E_OTHER_TOKEN"},
            ],
            "domains": {
                "finance": {
                    "accounts": [{"name": "sim-main", "venue": "sim", "budget": "100000"}],
                    "venue_path": str(venue_path),
                    "sim_faults": sim_faults,
                },
                "message": {"destinations": destinations or [ACME_DESTINATION]},
                # more domain tables (a domain registered by the test: its own table)
                **(domains or {}),
            },
            "execution": {**FAST_EXECUTION, **(execution or {})},
            "deliveries": {
                "first_retry_s": 0.2,
                "max_backoff_s": 1.0,
                "timeout_s": 2.0,
                # the receivers in these tests listen on loopback, as in the dev profile
                "allow_internal_targets": ["127.0.0.0/8", "::1/128"],
                **(deliveries or {}),
            },
        }
    )
    return resolve(
        settings,
        {
            "E2E_DEV_TOKEN": DEV_TOKEN,
            "E2E_OTHER_TOKEN": OTHER_TOKEN,
            "E2E_CALLBACK_SECRET": CALLBACK_SECRET,
            "COUNTERSIGN_LARK_APP_SECRET": sandbox.app_secret,
            "COUNTERSIGN_LARK_ENCRYPT_KEY": sandbox.encrypt_key,
            "COUNTERSIGN_LARK_VERIFICATION_TOKEN": sandbox.verification_token,
            **(environ or {}),
        },
    )


@dataclass
class Stack:
    mode: str
    bot_url: str
    sandbox: SandboxApp
    state: SandboxState
    hub: Hub
    store: Store
    clock: ShiftableClock
    http: aiohttp.ClientSession
    # the same port, store and sandbox; keyword arguments of bot_config change its config
    restart: Callable[..., Awaitable[None]]
    # the config the bot runs with now
    config: Callable[[], Config]

    async def propose(self, body: dict[str, Any]) -> dict[str, Any]:
        status, view = await self.post("/api/v1/operations", body)
        assert status == 201, view
        return view

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """POST `body` as JSON to the bot's `path` as the dev proposer: (status, answer)."""
        async with self.http.post(
            f"{self.bot_url}{path}",
            data=json.dumps(body),
            headers={"Authorization": f"Bearer {DEV_TOKEN}"},
        ) as response:
            answer: dict[str, Any] = await response.json()
            return response.status, answer

    async def api(self, method: str, path: str) -> tuple[int, Any]:
        async with self.http.request(
            method, f"{self.bot_url}{path}", headers={"Authorization": f"Bearer {DEV_TOKEN}"}
        ) as response:
            return response.status, await response.json()

    async def control(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        async with self.http.request(
            method, f"{self.sandbox.base_url}/sandbox/api{path}", json=body
        ) as r:
            return r.status, await r.json()

    def card_of(self, operation_id: str) -> str | None:
        """The sandbox message carrying this operation's card (the original, not copies)."""
        for message in self.state.messages.values():
            if message.forwarded_from or message.msg_type != "interactive":
                continue
            if operation_id in message.content:
                return message.message_id
        return None

    async def offered(self, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """Propose and wait until the card is in the chat and the operation awaits a decision."""
        view = await self.propose(body)
        await eventually(lambda: self.card_of(view["id"]) is not None, woken_by=self.state)
        message_id = self.card_of(view["id"])
        assert message_id is not None

        async def recorded() -> bool:
            op = await self.store.get(view["id"])
            return op is not None and op.card_message_id == message_id

        await eventually(recorded)
        _, fresh = await self.api("GET", f"/api/v1/operations/{view['id']}")
        return fresh, message_id

    async def click(
        self, message_id: str, operator: str, button: str = "confirm", **extra: Any
    ) -> dict[str, Any]:
        status, reply = await self.control(
            "POST",
            f"/messages/{message_id}/click",
            {"operator": operator, "button": button, **extra},
        )
        assert status == 200, reply
        return reply

    async def stored_click(self, operation_id: str, event_id: str | None) -> Any:
        """The stored confirmation row of one click (a refusal is stored just after its answer)."""
        found: list[Any] = []

        async def stored() -> bool:
            rows = await self.store.confirmations(operation_id)
            found[:] = [row for row in rows if event_id is None or row.event_id == event_id]
            return bool(found)

        await eventually(stored)
        return found[-1]

    def card(self, message_id: str) -> dict[str, Any]:
        card = self.state.messages[message_id].card()
        assert card is not None
        return card


StackFactory = Callable[..., Any]


@pytest.fixture
async def make_stack(backend: Backend, store: Store, tmp_path: Path) -> AsyncIterator[StackFactory]:
    """Start sandbox + bot in a given Lark mode; everything is torn down after the test."""
    cleanups: list[Callable[[], Any]] = []

    async def make(
        mode: str = "ws",
        *,
        execution: dict[str, Any] | None = None,
        sim_faults: str = "",
        audiences: list[dict[str, Any]] | None = None,
        deliveries: dict[str, Any] | None = None,
        cards: dict[str, Any] | None = None,
        approval_rules: list[dict[str, Any]] | None = None,
        people: dict[str, str] | None = None,
        web: dict[str, Any] | None = None,
        destinations: list[dict[str, Any]] | None = None,
        domains: dict[str, Any] | None = None,
        audit: dict[str, Any] | None = None,
        **lark: Any,
    ) -> Stack:
        state = default_state()
        options = SandboxOptions(
            client_config=ClientConfig(reconnect_nonce_s=0, reconnect_interval_s=1),
            url_verify_timeout_s=TEST_URL_VERIFY_TIMEOUT_S,  # the 1 s rule: tests/larksandbox
        )
        sandbox_app = build_sandbox(state, options)
        server = TestServer(sandbox_app, host="127.0.0.1")
        await server.start_server()
        app = state.apps[DEFAULT_APP_ID]
        sandbox = SandboxApp(
            f"http://127.0.0.1:{server.port}",
            app.app_id,
            app.app_secret,
            app.encrypt_key,
            app.verification_token,
            app.tenant_key,
        )
        port = free_port()
        options: dict[str, Any] = {
            "venue_path": tmp_path / "venue.db",
            "execution": execution,
            "sim_faults": sim_faults,
            "audiences": audiences,
            "deliveries": deliveries,
            "cards": cards,
            "approval_rules": approval_rules,
            "people": people,
            "web": web,
            "destinations": destinations,
            "domains": domains,
            "audit": audit,
            **lark,
        }
        config = bot_config(backend, port, sandbox, mode, **options)
        if web is not None:  # its redirect URL, registered as a real app's is
            await register_sign_in(sandbox, config)
        clock = ShiftableClock()
        running: list[tuple[asyncio.Event, asyncio.Task[Any]]] = []

        async def start() -> None:
            stop, ready = asyncio.Event(), asyncio.Event()
            bot = asyncio.create_task(
                serve(config, stop=stop, clock=clock, on_ready=lambda _url: ready.set())
            )
            running.append((stop, bot))
            await asyncio.wait_for(ready.wait(), scaled(30))

        async def halt() -> None:
            stop, bot = running.pop()
            stop.set()
            await asyncio.wait_for(bot, scaled(30))

        await start()
        bot_url = f"http://127.0.0.1:{port}"
        http = aiohttp.ClientSession()

        async def cleanup() -> None:
            if running:
                await halt()
            await http.close()
            await server.close()

        cleanups.append(cleanup)
        hub = sandbox_app[HUB_KEY]

        async def connected() -> None:
            if mode == "webhook":
                await point_webhooks(sandbox, bot_url)
            else:
                await eventually(
                    lambda: hub.longconn.connected(app.app_id) >= 1, deadline_s=30, woken_by=state
                )

                # The sandbox counts the socket once it accepts it; the bot's client marks
                # itself connected a moment later, and /readyz says "reconnecting" until then.
                async def bot_connected() -> bool:
                    async with http.get(f"{bot_url}/readyz") as response:
                        ready = await response.json()
                    transport = ready["components"]["callback_consumer"].get("transport", {})
                    return bool(transport.get("state") == "connected")

                await eventually(bot_connected, deadline_s=30)

        async def restart(**changes: Any) -> None:  # the same port, store and sandbox
            nonlocal config
            await halt()
            await eventually(lambda: hub.longconn.connected(app.app_id) == 0, woken_by=state)
            if changes:
                options.update(changes)
                config = bot_config(backend, port, sandbox, mode, **options)
            await start()
            await connected()

        await connected()
        return Stack(
            mode, bot_url, sandbox, state, hub, store, clock, http, restart, lambda: config
        )

    yield make
    for cleanup in reversed(cleanups):
        await cleanup()


@pytest.fixture(params=["ws", "webhook"])
async def stack(request: pytest.FixtureRequest, make_stack: StackFactory) -> Stack:
    made: Stack = await make_stack(request.param)
    return made


# -- reading and pushing through a stack -------------------------------------------------------


def auto_rules(stack: Stack) -> AutoRules:
    """What the clock's claims re-check under the config the bot runs with now."""
    settings = stack.config().settings
    return auto_send_rules(policy_digests(settings), settings.domains.for_kind)


def card_text(stack: Stack, message_id: str) -> str:
    return json.dumps(stack.card(message_id), ensure_ascii=False)


async def card_says(stack: Stack, message_id: str, *phrases: str, deadline_s: float = 60) -> None:
    try:
        await eventually(
            lambda: all(phrase in stack.state.messages[message_id].content for phrase in phrases),
            deadline_s=deadline_s,
            woken_by=stack.state,
        )
    except AssertionError:
        raise AssertionError(
            f"the card never showed {phrases}: {card_text(stack, message_id)}"
        ) from None


async def settled(stack: Stack, operation_id: str, status: str) -> dict[str, Any]:
    found: dict[str, Any] = {}

    async def check() -> bool:
        _, view = await stack.api("GET", f"/api/v1/operations/{operation_id}")
        found.update(view)
        return (view.get("outcome") or {}).get("status") == status

    # as card_says: a deadline only bounds a failure, and a worker process started again
    # while CI runs two suites side by side can take more than 15 s to settle an order
    await eventually(check, deadline_s=60)
    return found


def button_value(stack: Stack, message_id: str, action: str = "confirm") -> dict[str, Any]:
    button = answers.find_button(stack.card(message_id), action)
    assert button is not None and button.value is not None
    return dict(button.value)


async def push(stack: Stack, envelope: dict[str, Any]) -> dict[str, Any]:
    status, reply = await stack.control(
        "POST", f"/apps/{DEFAULT_APP_ID}/push", {"envelope": envelope}
    )
    assert status == 200, reply
    reply.setdefault("event_id", envelope["header"].get("event_id"))
    return dict(reply)


def envelope_for(
    stack: Stack, message_id: str, operator: str, value: dict[str, Any]
) -> dict[str, Any]:
    state = stack.state
    return events.card_action(
        state, state.apps[DEFAULT_APP_ID], state.users[operator], state.messages[message_id], value
    )
