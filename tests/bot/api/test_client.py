"""The Python client (bot/agents/client.py) against the real API on a loopback port (issue 16): typed
answers that match what the API sends, an idempotent propose, the API's refusals as ApiError,
Retry-After honoured on 429, and the blocking SyncClient. Both backends, and both HTTP
stacks the client sends with (aiohttp, and the standard library the CLI uses)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from bot.agents.client import ApiError, Client, SyncClient, request_id_for
from bot.api.intake import ProposalIn
from store import Store
from tests.support.api import TOKENS, ClientFactory, make_config
from tests.support.factories import order_request
from tests.support.processes import free_port
from tests.support.wire import unknown_fields

DEV, OTHER = TOKENS["DEV_AGENT_TOKEN"], TOKENS["OTHER_AGENT_TOKEN"]


@pytest.fixture(params=[False, True], ids=["aiohttp", "stdlib"])
def stdlib(request: pytest.FixtureRequest) -> bool:
    chosen: bool = request.param
    return chosen


def url_of(api: TestClient[Any, Any]) -> str:
    return str(api.make_url("")).rstrip("/")


def without_request_id() -> dict[str, Any]:
    body = order_request()
    del body["request_id"]
    return body


async def test_a_proposal_without_request_id_files_once_however_often_it_is_sent(
    api: TestClient[Any, Any], store: Store, stdlib: bool
) -> None:
    body = without_request_id()
    async with Client(url_of(api), DEV, stdlib=stdlib) as client:
        first = await client.propose(body)
        again = await client.propose(dict(body))
    assert first.created and not again.created
    assert first.operation.id == again.operation.id
    assert first.operation.source.request_id == request_id_for(body)
    assert unknown_fields(first.operation) == []
    assert len((await store.list_operations(limit=10)).items) == 1


async def test_the_apis_own_request_model_is_accepted_and_reads_come_back_typed(
    api: TestClient[Any, Any],
    stdlib: bool,
) -> None:
    proposal = ProposalIn.model_validate(order_request("client-typed"))
    async with Client(url_of(api), DEV, stdlib=stdlib) as client:
        filed = await client.propose(proposal)
        got = await client.get(filed.operation.id)
        page = await client.list(limit=5)
        cancelled = await client.cancel(filed.operation.id)
    assert got.id == filed.operation.id and got.state == "prepared"
    assert got.simulated and got.terms["title"].startswith("BUY")
    assert [item.id for item in page.items] == [got.id] and not page.has_more
    assert cancelled.state == "cancelled"
    for typed in (got, page, cancelled):
        assert unknown_fields(typed) == []


async def test_refusals_are_the_apis_code_message_and_fields(
    api: TestClient[Any, Any], stdlib: bool
) -> None:
    async with Client(url_of(api), DEV, stdlib=stdlib) as client:
        with pytest.raises(ApiError) as bad:
            await client.propose({**order_request("client-bad"), "audience": "nobody"})
        with pytest.raises(ApiError) as missing:
            await client.get("01HZZZZZZZZZZZZZZZZZZZZZZZ")
    assert (bad.value.status, bad.value.code) == (422, "invalid")
    assert [f["field"] for f in bad.value.fields] == ["audience"]
    assert bad.value.as_json()["fields"][0]["fix"]
    assert (missing.value.status, missing.value.code) == (404, "not_found")


async def test_another_proposers_token_cannot_read_the_operation(
    api: TestClient[Any, Any],
    stdlib: bool,
) -> None:
    async with (
        Client(url_of(api), DEV, stdlib=stdlib) as mine,
        Client(url_of(api), OTHER, stdlib=stdlib) as theirs,
    ):
        filed = await mine.propose(order_request("client-mine"))
        with pytest.raises(ApiError) as refused:
            await theirs.get(filed.operation.id)
        assert refused.value.status == 404
        assert (await theirs.list()).items == []


async def test_a_429_is_retried_after_the_retry_after_it_carries(
    client_for: ClientFactory,
    stdlib: bool,
) -> None:
    # a token every 10 s: the second ask, sent at once, is refused unless 10 s pass between
    rate = {"proposer_rate_per_s": 0.1, "proposer_burst": 1}
    limited = await client_for(make_config(http=rate))
    async with Client(url_of(limited), DEV, attempts=1, stdlib=stdlib) as once:
        await once.list()  # the burst of one is spent
        with pytest.raises(ApiError) as refused:
            await once.list()
    assert refused.value.status == 429
    assert refused.value.retry_after_s is not None and 1 <= refused.value.retry_after_s <= 10
    async with Client(url_of(limited), DEV, stdlib=stdlib) as patient:
        page = await patient.list()  # refused, then asked again after Retry-After
    assert page.items == []


async def test_an_unreachable_api_is_one_clear_error(stdlib: bool) -> None:
    async with Client(f"http://127.0.0.1:{free_port()}", DEV, attempts=2, stdlib=stdlib) as client:
        with pytest.raises(ApiError) as unreachable:
            await client.list()
    assert unreachable.value.status == 0 and unreachable.value.code == "unreachable"


async def test_the_sync_client_proposes_and_reads_without_an_event_loop(
    api: TestClient[Any, Any],
    stdlib: bool,
) -> None:
    def blocking() -> tuple[str, str]:
        with SyncClient(url_of(api), DEV, stdlib=stdlib) as client:
            filed = client.propose(order_request("client-sync"))
            return filed.operation.id, client.get(filed.operation.id).id

    filed_id, read_id = await asyncio.to_thread(blocking)
    assert filed_id == read_id
