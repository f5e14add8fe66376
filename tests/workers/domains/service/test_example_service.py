"""The example billing service (examples/service): it books a refund only on a verified call,
and its used keys outlive a restart, so a call replayed later is answered, not run again."""

from __future__ import annotations

import json
from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer

from examples.service.app import CALL_PATH, STATUS_PATH, Billing, SqliteSeenKeys, build_app
from workers.domains.service.calls import call_headers, status_headers

SECRET = "example-service-secret-0123456789"
KEY = "cs-op1"
BODY = json.dumps(
    {
        "operation_id": "op1",
        "client_id": KEY,
        "service": "billing",
        "action": "refund",
        "arguments": {"order_id": "ord_1", "amount": "5.00", "reason": "late"},
        "confirm_digest": "d" * 64,
        "confirmed_by": [{"open_id": "ou_alice", "name": "Alice"}],
    }
).encode()


async def post(billing: Billing, body: bytes, headers: dict[str, str]) -> tuple[int, object]:
    async with TestClient(TestServer(build_app(billing))) as client:
        response = await client.post(CALL_PATH, data=body, headers=headers)
        return response.status, await response.json()


async def test_a_call_replayed_after_a_restart_is_answered_not_run_again(tmp_path: Path) -> None:
    ledger = tmp_path / "billing.db"
    first = Billing(SECRET, SqliteSeenKeys(ledger))
    status, answer = await post(first, BODY, call_headers(SECRET, BODY, KEY, "op1"))
    assert status == 200 and answer == {
        "amount": "5.00",
        "order_id": "ord_1",
        "refund_id": "rf_cs-op1",
    }

    restarted = Billing(SECRET, SqliteSeenKeys(ledger))
    again = await post(restarted, BODY, call_headers(SECRET, BODY, KEY, "op1"))
    assert again == (200, answer)
    assert len(restarted.keys.refunds()) == 1
    async with TestClient(TestServer(build_app(restarted))) as client:
        response = await client.get(
            STATUS_PATH, params={"idempotency_key": KEY}, headers=status_headers(SECRET, KEY, "op1")
        )
        assert await response.json() == {
            "status": "completed",
            "answer": answer,
            "http_status": 200,
        }


async def test_only_a_verified_call_books_anything(tmp_path: Path) -> None:
    billing = Billing(SECRET, SqliteSeenKeys(tmp_path / "billing.db"))
    forged = call_headers("someone-elses-secret-0123", BODY, KEY, "op1")
    status, _answer = await post(billing, BODY, forged)
    assert status == 401 and billing.keys.refunds() == []


async def test_a_key_fenced_through_the_status_route_is_refused_after_a_restart(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "billing.db"
    billing = Billing(SECRET, SqliteSeenKeys(ledger))
    async with TestClient(TestServer(build_app(billing))) as client:
        response = await client.get(
            STATUS_PATH,
            params={"idempotency_key": KEY, "fence": "1"},
            headers=status_headers(SECRET, KEY, "op1", fence=True),
        )
        assert await response.json() == {"status": "unknown", "fenced": True}

    restarted = Billing(SECRET, SqliteSeenKeys(ledger))  # the fence is in the file
    status, answer = await post(restarted, BODY, call_headers(SECRET, BODY, KEY, "op1"))
    assert status == 409 and "declared never received" in answer["error"]  # type: ignore[index]
    assert restarted.keys.refunds() == []
