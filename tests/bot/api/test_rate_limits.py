"""Rate limits protect the right things (issue 10 item 9): a proposer's reads cannot starve its
own cancels, and unknown tokens are limited per peer address, so a guesser is slowed down
without locking out a good token or another address. Counts, not durations: the buckets
refill so slowly here that no refill happens during a test."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient

from bot.api.auth import RateLimiter, peer_key
from store import State, Store
from tests.support.api import TOKENS, ClientFactory, auth, make_config
from tests.support.factories import order_request

Client = TestClient[Any, Any]
SLOW = 0.0001  # tokens per second: none come back while a test runs


async def _propose(api: Client) -> str:
    response = await api.post(
        "/api/v1/operations", data=json.dumps(order_request()), headers=auth()
    )
    assert response.status == 201
    operation_id: str = (await response.json())["id"]
    return operation_id


async def test_reads_that_exhaust_the_budget_do_not_starve_the_proposers_cancel(
    client_for: ClientFactory, store: Store
) -> None:
    api = await client_for(make_config(http={"proposer_rate_per_s": SLOW, "proposer_burst": 3}))
    operation_id = await _propose(api)  # 1 of 3
    statuses = [
        (await api.get(f"/api/v1/operations/{operation_id}", headers=auth())).status
        for _ in range(4)
    ]
    assert statuses == [200, 200, 429, 429]  # the proposer's budget is spent on reads
    response = await api.post(f"/api/v1/operations/{operation_id}/cancel", headers=auth())
    assert response.status == 200 and (await response.json())["state"] == "cancelled"
    op = await store.get(operation_id)
    assert op is not None and op.state is State.CANCELLED
    # cancels have their own bucket of the same size, not an unlimited one
    again = [
        (await api.post(f"/api/v1/operations/{operation_id}/cancel", headers=auth())).status
        for _ in range(3)
    ]
    assert again == [409, 409, 429]
    # and another proposer is untouched by either
    other = TOKENS["OTHER_AGENT_TOKEN"]
    assert (await api.get("/api/v1/operations", headers=auth(other))).status == 200


@pytest.fixture
async def from_other_address() -> AsyncIterator[aiohttp.ClientSession]:
    # The whole of 127/8 is loopback on Linux: a second peer address without a second host.
    connector = aiohttp.TCPConnector(local_addr=("127.0.0.2", 0))
    async with aiohttp.ClientSession(connector=connector) as session:
        yield session


async def test_unknown_tokens_are_limited_per_peer_address(
    client_for: ClientFactory, store: Store, from_other_address: aiohttp.ClientSession
) -> None:
    api = await client_for(
        make_config(http={"unauthenticated_rate_per_s": SLOW, "unauthenticated_burst": 5})
    )
    guesses = [
        (await api.get("/api/v1/operations", headers=auth(f"guess-{n:04d}-xxxxxxxx"))).status
        for n in range(8)
    ]
    assert guesses == [401] * 5 + [429] * 3
    limited = await api.get("/api/v1/operations", headers=auth("guess-9999"))
    body = await limited.json()
    assert body["error"]["code"] == "rate_limited" and int(limited.headers["Retry-After"]) >= 1
    assert "guess" not in json.dumps(body)  # the offered token is never echoed
    # a missing header counts as an unknown token too
    assert (await api.get("/api/v1/operations")).status == 429
    # a good token from the same address still works, proposing included
    assert (await api.get("/api/v1/operations", headers=auth())).status == 200
    await _propose(api)
    # another address has its own budget
    url = str(api.make_url("/api/v1/operations"))
    async with from_other_address.get(url, headers=auth("guess-from-elsewhere")) as response:
        assert response.status == 401
    assert await store.count() == 1


def test_a_bucket_refills_at_its_rate_up_to_its_burst() -> None:
    now = [0.0]
    limiter = RateLimiter(rate_per_s=2.0, burst=3, clock=lambda: now[0])
    assert [limiter.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.take("a") == pytest.approx(0.5)  # one token comes back in 0.5 s
    assert limiter.take("b") == 0.0  # keys are independent
    now[0] = 0.5
    assert limiter.take("a") == 0.0 and limiter.take("a") > 0
    now[0] = 100.0
    assert [limiter.take("a") for _ in range(4)][-1] > 0  # refilled to the burst, no more


def test_a_clock_that_steps_back_neither_refills_nor_drains_a_bucket() -> None:
    now = [100.0]
    limiter = RateLimiter(rate_per_s=1.0, burst=2, clock=lambda: now[0])
    assert limiter.take("a") == 0.0  # one token left
    now[0] = 0.0  # the wall clock stepped back 100 s
    assert limiter.take("a") == 0.0  # the token left is still there
    assert limiter.take("a") == pytest.approx(1.0)  # and none came back
    now[0] = 1.0
    assert limiter.take("a") == 0.0  # refills again from where the clock now is


def test_the_limiter_forgets_idle_keys_so_many_addresses_cannot_grow_it_unbounded() -> None:
    now = [0.0]
    limiter = RateLimiter(rate_per_s=1.0, burst=2, clock=lambda: now[0], max_keys=100)
    for n in range(1000):
        limiter.take(f"10.0.{n // 256}.{n % 256}")
        now[0] += 0.001
    assert len(limiter) <= 100
    # the newest keys are kept: one just spent stays spent
    limiter.take("10.0.3.231")
    assert limiter.take("10.0.3.231") > 0


@pytest.mark.parametrize(
    "remote, key",
    [
        ("192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"),  # one /64 is one peer
        ("::ffff:192.0.2.7", "192.0.2.7"),  # IPv4 through a dual-stack socket
        ("::ffff:192.0.2.8", "192.0.2.8"),
        (None, "unknown"),
        ("not-an-address", "not-an-address"),
    ],
)
def test_peers_are_keyed_by_address_and_ipv6_by_its_64_prefix(remote: str | None, key: str) -> None:
    assert peer_key(remote) == key
