"""Reading, paging and cancelling through the API."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp.test_utils import TestClient

from store import Click, State, Store
from tests.support.api import TOKENS, auth
from tests.support.factories import draft, offered, order_request

Client = TestClient[Any, Any]


async def _propose(api: Client, token: str = TOKENS["DEV_AGENT_TOKEN"]) -> dict[str, Any]:
    response = await api.post(
        "/api/v1/operations", data=json.dumps(order_request()), headers=auth(token)
    )
    assert response.status == 201
    body: dict[str, Any] = await response.json()
    return body


async def test_paging_a_thousand_operations_by_fifty_while_others_are_inserted(
    api: Client, store: Store
) -> None:
    created = [(await store.propose(draft())).operation for _ in range(1000)]
    # the documented order: (created_at, id), newest first
    originals = [
        op.id for op in sorted(created, key=lambda op: (op.created_at, op.id), reverse=True)
    ]
    stop = asyncio.Event()

    async def insert_concurrently() -> int:
        inserted = 0
        while not stop.is_set():
            await store.propose(draft())
            inserted += 1
            await asyncio.sleep(0)
        return inserted

    inserter = asyncio.create_task(insert_concurrently())
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        params = {"limit": "50", **({"cursor": cursor} if cursor else {})}
        response = await api.get("/api/v1/operations", params=params, headers=auth())
        assert response.status == 200
        page = await response.json()
        assert len(page["items"]) <= 50
        seen += [item["id"] for item in page["items"]]
        pages += 1
        if not page["has_more"]:
            assert page["next_cursor"] is None
            break
        cursor = page["next_cursor"]
    stop.set()
    assert await inserter > 0

    assert len(seen) == len(set(seen)), "no operation appears twice"
    original_ids = set(originals)
    seen_originals = [op_id for op_id in seen if op_id in original_ids]
    assert seen_originals == originals, "every original exactly once, newest first"
    assert pages >= 20


async def test_list_filters_by_state_and_validates_its_query(api: Client, store: Store) -> None:
    offered_op = await offered(store)
    await store.propose(draft())
    response = await api.get("/api/v1/operations?state=awaiting_confirmation", headers=auth())
    page = await response.json()
    assert [item["id"] for item in page["items"]] == [offered_op.id]
    for query, field in [
        ("limit=51", "limit"),
        ("limit=0", "limit"),
        ("state=done", "state"),
        ("cursor=garbage!!", "cursor"),
    ]:
        response = await api.get(f"/api/v1/operations?{query}", headers=auth())
        assert response.status == 422, query
        assert (await response.json())["error"]["fields"][0]["field"] == field


async def test_proposers_see_and_cancel_only_their_own_operations(api: Client) -> None:
    mine = await _propose(api)
    other = TOKENS["OTHER_AGENT_TOKEN"]
    response = await api.get(f"/api/v1/operations/{mine['id']}", headers=auth(other))
    assert response.status == 404
    response = await api.post(f"/api/v1/operations/{mine['id']}/cancel", headers=auth(other))
    assert response.status == 404
    listing = await (await api.get("/api/v1/operations", headers=auth(other))).json()
    assert listing["items"] == []
    response = await api.get(f"/api/v1/operations/{mine['id']}", headers=auth())
    assert (await response.json())["state"] == "prepared"


async def test_cancel_moves_an_unclaimed_operation_and_refuses_a_claimed_one(
    api: Client, store: Store
) -> None:
    first = await _propose(api)
    response = await api.post(f"/api/v1/operations/{first['id']}/cancel", headers=auth())
    assert response.status == 200 and (await response.json())["state"] == "cancelled"
    again = await api.post(f"/api/v1/operations/{first['id']}/cancel", headers=auth())
    assert again.status == 409

    second = await _propose(api)
    op = await store.mark_card_sent(second["id"], "om_2")
    await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    response = await api.post(f"/api/v1/operations/{op.id}/cancel", headers=auth())
    body = await response.json()
    assert response.status == 409 and body["error"]["code"] == "not_cancellable"
    after = await store.get(op.id)
    assert after is not None and after.state is State.CLAIMED
    view = await (await api.get(f"/api/v1/operations/{op.id}", headers=auth())).json()
    assert view["execution"] == {"state": "queued"}


async def test_unknown_routes_and_ids_answer_json_errors(api: Client) -> None:
    response = await api.get("/api/v1/operations/01NOPE", headers=auth())
    assert response.status == 404 and (await response.json())["error"]["code"] == "not_found"
    response = await api.get("/nope")
    assert response.status == 404 and (await response.json())["error"]["code"] == "not_found"
    response = await api.get("/healthz")
    assert response.status == 200 and (await response.json()) == {"status": "ok"}
