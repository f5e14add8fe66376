"""The real aiohttp app on a loopback port, backed by the test store."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.api.app import CapabilityReaders, create_app
from bot.config import Config, parse, resolve
from store.authority import Store
from workers.domains.finance.venue import SimVenue

TOKENS = {
    "DEV_AGENT_TOKEN": "dev-token-0123456789",
    "OTHER_AGENT_TOKEN": "other-token-0123456789",
    "NARROW_AGENT_TOKEN": "narrow-token-0123456789",
}


def settings_data(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "audiences": [
            {"name": "ops", "chat_id": "oc_ops", "operators": ["ou_alice", "ou_bob"]},
            {"name": "treasury", "chat_id": "oc_treasury", "operators": ["ou_carol"]},
        ],
        "proposers": [
            {"name": "dev-agent", "token_env": "DEV_AGENT_TOKEN"},
            {"name": "other-agent", "token_env": "OTHER_AGENT_TOKEN"},
            {
                "name": "narrow-agent",
                "token_env": "NARROW_AGENT_TOKEN",
                "kinds": ["message.send"],
                "audiences": ["ops"],
            },
        ],
        "domains": {
            "finance": {"accounts": [{"name": "sim-main", "venue": "sim", "budget": "100000"}]},
            "message": {
                "destinations": [
                    {
                        "name": "acme",
                        "chat_id": "oc_acme",
                        "counterparty": "acme-supplier",
                        "ops_chat_id": "oc_ops",
                    }
                ]
            },
        },
    }
    data.update(overrides)
    return data


def make_config(**overrides: Any) -> Config:
    return resolve(parse(settings_data(**overrides)), TOKENS)


def resolve_with(dashboard_token: str, **overrides: Any) -> Config:
    """A config whose environment also holds a dashboard token, in variable DASH."""
    return resolve(parse(settings_data(**overrides)), {**TOKENS, "DASH": dashboard_token})


def auth(token: str = TOKENS["DEV_AGENT_TOKEN"]) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


ClientFactory = Callable[..., Any]


@pytest.fixture
async def venue(tmp_path: Path) -> AsyncIterator[SimVenue]:
    """The real simulated venue the API reads capabilities from (it holds sim-main)."""
    opened = await SimVenue.open(tmp_path / "venue.db", accounts=["sim-main"])
    yield opened
    await opened.close()


@pytest.fixture
async def client_for(store: Store, venue: SimVenue) -> AsyncIterator[ClientFactory]:
    clients: list[TestClient[Any, Any]] = []
    attached: CapabilityReaders = {"finance.order": venue.capabilities}

    async def factory(
        config: Config | None = None, capabilities: CapabilityReaders | None = None
    ) -> TestClient[Any, Any]:
        readers = attached if capabilities is None else capabilities
        client: TestClient[Any, Any] = TestClient(
            TestServer(create_app(config or make_config(), store, capabilities=readers))
        )
        await client.start_server()
        clients.append(client)
        return client

    yield factory
    for client in clients:
        await client.close()


@pytest.fixture
async def api(client_for: ClientFactory) -> TestClient[Any, Any]:
    client: TestClient[Any, Any] = await client_for()
    return client
