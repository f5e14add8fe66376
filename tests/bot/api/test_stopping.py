"""A stopping server does not wait out its long waits: the dashboard's long poll (25 s) and
the API's `wait_s` (up to 60 s) answer as soon as it begins to stop, so a restart is not held
up by an open page or a waiting proposer. Each wait is in flight (seen by the server) before
the stop; the deadline below only bounds a failure, far under either wait's own length."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp.test_utils import TestClient

from store import Store, change_mark
from tests.support.api import TOKENS, ClientFactory
from tests.support.factories import offered
from tests.support.waiting import eventually

AUTH = {"Authorization": f"Bearer {TOKENS['DEV_AGENT_TOKEN']}"}
BOUND_S = 20.0  # under LONG_POLL_S (25) and the 60 s wait: an answer before it came from the stop


def requests_seen(client: TestClient[Any, Any]) -> int:
    server = client.server.runner.server
    assert server is not None
    return server.requests_count  # counted as a request's handling begins


async def test_the_long_poll_and_wait_s_answer_when_the_server_begins_to_stop(
    store: Store, client_for: ClientFactory
) -> None:
    op = await offered(store)
    client = await client_for()
    mark = await change_mark(store)
    poll = asyncio.create_task(client.get("/ops/changes", params={"since": mark}))
    wait = asyncio.create_task(
        client.get(f"/api/v1/operations/{op.id}?wait_s=60&until=final", headers=AUTH)
    )
    await eventually(lambda: requests_seen(client) == 2)
    assert not poll.done() and not wait.done()  # nothing changed: both are waiting

    await client.server.runner.shutdown()  # what a SIGTERM starts (bot/app/server.py)
    polled, waited = await asyncio.wait_for(asyncio.gather(poll, wait), BOUND_S)
    assert polled.status == 200 and (await polled.json()) == {"changed": False}
    assert waited.status == 200
    view = await waited.json()
    assert view["id"] == op.id and view["state"] == "awaiting_confirmation"
