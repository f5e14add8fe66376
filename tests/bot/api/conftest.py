"""The real aiohttp app on a loopback port, backed by the test store; a real sandbox
(`sandbox`) as Lark for the sign-in tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.api.app import create_app
from bot.api.keys import CapabilityReaders
from bot.config import Config
from store import Store
from tests.support.api import ClientFactory, make_config
from tests.support.sandbox import sandbox  # noqa: F401  (fixture: sign-in tests)
from workers.domains.finance.runner import precheck_reader
from workers.domains.finance.sim.venue import SimVenue


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
        config: Config | None = None,
        capabilities: CapabilityReaders | None = None,
        prechecks: SimVenue | None = None,  # the venue the pre-check reads (default: venue)
    ) -> TestClient[Any, Any]:
        readers = attached if capabilities is None else capabilities
        client: TestClient[Any, Any] = TestClient(
            TestServer(
                create_app(
                    config or make_config(),
                    store,
                    capabilities=readers,
                    prechecks={"finance.order": precheck_reader(prechecks or venue)},
                )
            )
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
