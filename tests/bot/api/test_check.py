"""POST /api/v1/operations/check: the proposal's admission, and nothing filed (issue 16).

The same body as a filing, every intake and capability check run against the real simulated
venue; the answer is what the card would show and what the policy would ask, or the very
refusal the filing would get. Nothing is stored either way. Both backends."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from bot.api.wire import CheckView, ErrorView
from store import Store, World
from tests.support.api import auth
from tests.support.factories import ORDER_PAYLOAD, order_request


async def operations(store: Store) -> int:
    page = await store.list_operations(limit=100)
    return len(page.items)


async def check(api: TestClient[Any, Any], body: Any) -> tuple[int, Any]:
    response = await api.post(
        "/api/v1/operations/check",
        data=body if isinstance(body, str) else json.dumps(body),
        headers=auth(),
    )
    return response.status, await response.json()


async def test_an_admissible_order_is_described_and_not_filed(
    api: TestClient[Any, Any], store: Store
) -> None:
    status, body = await check(api, order_request("check-ok"))
    assert status == 200, body
    found = CheckView.model_validate(body)
    assert found.model_extra == {}
    assert (found.admissible, found.kind, found.audience, found.request_id) == (
        True,
        "finance.order",
        "ops",
        "check-ok",
    )
    assert found.simulated and found.title and "BTC-PERP" in found.title
    assert found.world is World.SIMULATED  # the world it would act in, as the card will say
    assert found.approval["required"] == 1 and found.replays is None
    assert await operations(store) == 0


@pytest.mark.parametrize(
    ("change", "status", "field"),
    [
        ({"payload": {**ORDER_PAYLOAD, "instrument": "DOGE-PERP"}}, 422, "payload.instrument"),
        ({"audience": "nobody"}, 422, "audience"),
    ],
    ids=["unknown-instrument", "wrong-audience"],
)
async def test_a_bad_order_gets_the_filings_refusal_and_nothing_is_filed(
    api: TestClient[Any, Any], store: Store, change: dict[str, Any], status: int, field: str
) -> None:
    body = {**order_request("check-bad"), **change}
    checked, refusal = await check(api, body)
    filed_status, filed = await api_propose(api, body)
    assert checked == filed_status == status, (refusal, filed)
    error = ErrorView.model_validate(refusal["error"])
    assert field in [problem.field for problem in error.fields], error
    assert refusal == filed  # the very refusal the filing gets
    assert await operations(store) == 0


async def test_a_fee_cap_the_pre_check_refuses_is_named_and_filing_refuses_it_alike(
    api: TestClient[Any, Any], store: Store
) -> None:
    """The cap is checked against the venue's fees at the mark now; the dry run answers what
    filing answers (issue 30: no card is offered for an order that could never run)."""
    body = {**order_request("check-fee"), "payload": {**ORDER_PAYLOAD, "max_fee": "0.0001"}}
    status, refusal = await check(api, body)
    assert status == 422 and refusal["error"]["code"] == "precheck_would_refuse", refusal
    assert await api_propose(api, body) == (422, refusal)
    [problem] = ErrorView.model_validate(refusal["error"]).fields
    assert problem.field == "payload.max_fee" and problem.reason.startswith("fee_cap_too_low")
    assert "max_fee" in problem.fix
    assert await operations(store) == 0
    body["payload"]["max_fee"] = "1.5"  # the same order with the cap it needs passes
    status, answer = await check(api, body)
    assert status == 200 and answer["admissible"], answer


async def test_a_float_quantity_is_named_by_its_path(
    api: TestClient[Any, Any], store: Store
) -> None:
    raw = json.dumps(order_request("check-float")).replace(
        '"quantity": "0.010"', '"quantity": 0.01'
    )
    status, refusal = await check(api, raw)
    assert status == 422
    assert [f["field"] for f in refusal["error"]["fields"]] == ["payload.quantity"]
    assert await operations(store) == 0


async def test_every_problem_of_a_payload_is_named_at_once_with_its_fix(
    api: TestClient[Any, Any], store: Store
) -> None:
    """A bad side does not hide a limit order's missing price (issue 36): the check and the
    filing both name each at its own field, with a fix."""
    payload = {k: v for k, v in ORDER_PAYLOAD.items() if k != "limit_price"}
    body = {**order_request("check-two"), "payload": {**payload, "side": "hold"}}
    checked, refusal = await check(api, body)
    assert (checked, refusal) == await api_propose(api, body)  # the very refusal filing gets
    assert checked == 422 and refusal["error"]["code"] == "invalid", refusal
    found = {p.field: p for p in ErrorView.model_validate(refusal["error"]).fields}
    assert set(found) == {"payload.side", "payload.limit_price"}, refusal
    assert found["payload.side"].reason and found["payload.side"].fix
    assert found["payload.limit_price"].reason == "a limit order needs limit_price"
    assert found["payload.limit_price"].fix == "add limit_price or use order_type market"
    assert await operations(store) == 0


async def test_a_request_id_already_filed_is_named_and_a_different_body_conflicts(
    api: TestClient[Any, Any], store: Store
) -> None:
    status, filed = await api_propose(api, order_request("check-replay"))
    assert status == 201
    status, body = await check(api, order_request("check-replay"))
    assert status == 200 and body["replays"] == filed["id"]
    other = order_request("check-replay", expires_in_s=600)
    status, body = await check(api, other)
    assert status == 409 and body["error"]["code"] == "request_id_conflict"
    assert await operations(store) == 1


async def api_propose(api: TestClient[Any, Any], body: Any) -> tuple[int, Any]:
    response = await api.post("/api/v1/operations", data=json.dumps(body), headers=auth())
    return response.status, await response.json()
