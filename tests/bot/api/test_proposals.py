"""POST /api/v1/operations: idempotency, validation, authorization."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from store import Store
from tests.support.api import TOKENS, ClientFactory, auth, make_config, post, settings_data
from tests.support.factories import message_request, order_request

Client = TestClient[Any, Any]


async def test_a_proposal_is_stored_and_read_back_as_the_projection(
    api: Client, store: Store
) -> None:
    status, view = await post(api, order_request("order-1"))
    assert status == 201
    assert view["state"] == "prepared" and view["kind"] == "finance.order"
    # the world it acts in, beside `simulated` (nothing of it leaves this machine)
    assert (view["world"], view["simulated"]) == ("simulated", True)
    assert view["audience"] == {
        "name": "ops",
        "chat_id": "oc_ops",
        "operators": ["ou_alice", "ou_bob"],
        "allow_self_approval": False,
    }
    assert view["payload"]["quantity"] == "0.010"  # the decimal string, exactly as sent
    terms = {t["name"]: t["value"] for t in view["terms"]["terms"]}
    assert terms["quantity"] == "0.010" and terms["limit_price"] == "60000"
    assert view["source"]["request_id"] == "order-1" and view["source"]["proposer"] == "dev-agent"
    assert view["execution"] is None and view["outcome"] is None
    stored = await store.get(view["id"])
    assert stored is not None and stored.confirm_digest == view["confirm_digest"]
    # the filing's answer is the operation as read, and what its filing superseded (nothing)
    assert (view.pop("supersedes"), view.pop("supersedes_note")) == ([], None)
    response = await api.get(f"/api/v1/operations/{view['id']}", headers=auth())
    assert response.status == 200 and await response.json() == view


async def test_replaying_the_same_request_returns_the_same_operation(
    api: Client, store: Store
) -> None:
    first_status, first = await post(api, order_request("same"))
    second_status, second = await post(api, order_request("same"))
    assert (first_status, second_status) == (201, 200)
    assert second["id"] == first["id"] and second["confirm_digest"] == first["confirm_digest"]
    assert await store.count() == 1


async def test_the_same_request_id_with_changed_content_is_a_409_naming_the_fields(
    api: Client, store: Store
) -> None:
    await post(api, order_request("same"))
    changed = order_request("same", expires_in_s=600)
    changed["payload"]["quantity"] = "0.020"
    changed["payload"]["protective"]["stop_loss"] = "56000"
    status, body = await post(api, changed)
    assert status == 409 and body["error"]["code"] == "request_id_conflict"
    assert {f["field"] for f in body["error"]["fields"]} == {
        "expires_in_s",
        "payload.quantity",
        "payload.protective.stop_loss",
    }
    assert await store.count() == 1


async def test_request_ids_are_scoped_per_proposer(api: Client, store: Store) -> None:
    _, mine = await post(api, order_request("shared-id"))
    status, theirs = await post(api, order_request("shared-id"), TOKENS["OTHER_AGENT_TOKEN"])
    assert status == 201 and theirs["id"] != mine["id"]


async def test_twenty_concurrent_identical_posts_make_one_operation(
    api: Client, store: Store
) -> None:
    body = order_request("burst")
    results = await asyncio.gather(*[post(api, body) for _ in range(20)])
    statuses = sorted(status for status, _ in results)
    assert statuses == [200] * 19 + [201]
    assert len({view["id"] for _, view in results}) == 1
    assert await store.count() == 1


def _with_payload(**changes: Any) -> dict[str, Any]:
    body = order_request()
    body["payload"].update(changes)
    return body


INVALID: dict[str, tuple[Any, set[str]]] = {
    "float quantity": (
        '{"request_id":"f1","kind":"finance.order","audience":"ops","payload":{"quantity":0.5}}',
        {"payload.quantity"},
    ),
    "exponent literal": (
        '{"request_id":"f2","kind":"finance.order","audience":"ops","payload":{"limit_price":6e4}}',
        {"payload.limit_price"},
    ),
    "NaN literal": (
        '{"request_id":"f3","kind":"finance.order","audience":"ops","payload":{"max_fee":NaN}}',
        {"payload.max_fee"},
    ),
    "float outside the payload": (
        '{"request_id":"f4","kind":"finance.order","audience":"ops","payload":{},"expires_in_s":90.0}',
        {"expires_in_s"},
    ),
    "exponent in a decimal string": (_with_payload(quantity="1e-2"), {"payload.quantity"}),
    "negative quantity": (_with_payload(quantity="-1"), {"payload.quantity"}),
    "integer instead of decimal string": (_with_payload(leverage=2), {"payload.leverage"}),
    "unknown payload field": (_with_payload(note="hi"), {"payload.note"}),
    "unknown envelope field": ({**order_request(), "confirmed": True}, {"confirmed"}),
    "unknown protective field": (
        _with_payload(protective={"stop_loss": "1", "trailing": "2"}),
        {"payload.protective.trailing"},
    ),
    "missing side": ({**order_request(), "payload": {}}, {"payload.side", "payload.quantity"}),
    "limit without price": (_with_payload(limit_price=None), {"payload.limit_price"}),
    "control character in instrument": (
        _with_payload(instrument="BTC\u0007-PERP"),
        {"payload.instrument"},
    ),
    "bidi override in account": (_with_payload(account="sim\u202emain"), {"payload.account"}),
    "control character in request_id": (order_request("id\u0000x"), {"request_id"}),
    "unknown account": (_with_payload(account="nope"), {"payload.account"}),
    "counterparty of another destination": (
        message_request(payload={**message_request()["payload"], "counterparty": "evil"}),
        {"payload.counterparty"},
    ),
    "empty text after stripping": (
        message_request(payload={**message_request()["payload"], "text": "\u0000\u0007 \n"}),
        {"payload.text"},
    ),
    "over-long text": (
        message_request(payload={**message_request()["payload"], "text": "x" * 4001}),
        {"payload.text"},
    ),
    "oversized payload (16 KiB cap)": (
        message_request(
            payload={**message_request()["payload"], "text": "y" * 3000, "pad": "z" * 17000}
        ),
        {"payload"},
    ),
    "expiry out of range": (order_request(expires_in_s=5), {"expires_in_s"}),
    "unknown audience": (order_request(audience="nobody"), {"audience"}),
    "unsupported schema version": (order_request(schema_version=9), {"schema_version"}),
    "unknown kind": ({**order_request(), "kind": "finance.withdraw"}, {"kind"}),
    "callback over plain http to another host": (
        order_request(source={"callback": {"url": "http://example.com/hook", "secret_ref": "x"}}),
        {"source.callback.url"},
    ),
    "callback secret the proposer does not have": (
        order_request(
            source={"callback": {"url": "https://agent.example/hook", "secret_ref": "nope"}}
        ),
        {"source.callback.secret_ref"},
    ),
    "callback carrying a secret": (
        order_request(
            source={
                "callback": {"url": "https://a.example/h", "secret_ref": "x", "secret": "s3cr3t"}
            }
        ),
        {"source.callback.secret"},
    ),
    "conversation that is not a Lark chat and message": (
        order_request(source={"conversation": {"chat_id": "ops", "message_id": "42"}}),
        {"source.conversation.chat_id", "source.conversation.message_id"},
    ),
    "not an object": ("[1, 2]", {"$"}),
    "not JSON": ("{nope", {"$"}),
}


@pytest.mark.parametrize("case", sorted(INVALID))
async def test_invalid_input_is_a_422_naming_the_fields_and_stores_nothing(
    api: Client, store: Store, case: str
) -> None:
    body, fields = INVALID[case]
    status, reply = await post(api, body)
    assert status == 422, reply
    error = reply["error"]
    assert error["message"] and error["code"]
    named = {f["field"] for f in error.get("fields", [])}
    assert fields <= named, (case, named)
    assert all(f["reason"] and f["fix"] for f in error.get("fields", []))
    assert await store.count() == 0


async def test_codes_distinguish_unknown_kind_disabled_domain_and_schema_version(
    client_for: ClientFactory, store: Store
) -> None:
    data = settings_data()
    data["domains"]["finance"]["enabled"] = False
    disabled = await client_for(make_config(domains=data["domains"]))
    status, reply = await post(disabled, order_request())
    assert (status, reply["error"]["code"]) == (422, "domain_disabled")
    status, reply = await post(disabled, {**order_request(), "kind": "x.y"})
    assert (status, reply["error"]["code"]) == (422, "unknown_kind")
    status, reply = await post(disabled, message_request(schema_version=2))
    assert (status, reply["error"]["code"]) == (422, "unsupported_schema_version")
    assert await store.count() == 0


async def test_message_text_control_characters_are_refused_not_stripped(
    api: Client, store: Store
) -> None:
    body = message_request()
    body["payload"]["text"] = "Pay\u0000 invoice 42\r\nthanks"
    status, reply = await post(api, body)
    assert status == 422
    [problem] = reply["error"]["fields"]
    assert problem["field"] == "payload.text" and "U+0000 at character 4" in problem["reason"]
    assert await store.count() == 0
    body["payload"]["text"] = "Pay invoice 42\r\nthanks"  # CR LF is still normalised
    status, view = await post(api, body)
    assert status == 201 and view["payload"]["text"] == "Pay invoice 42\nthanks"


async def test_a_body_over_the_cap_is_413_and_stores_nothing(api: Client, store: Store) -> None:
    status, reply = await post(api, json.dumps({"pad": "x" * 70000}))
    assert status == 413 and reply["error"]["code"] == "body_too_large"
    assert await store.count() == 0


async def test_missing_or_wrong_tokens_are_401(api: Client, store: Store) -> None:
    response = await api.post("/api/v1/operations", data=json.dumps(order_request()))
    assert response.status == 401
    assert (await response.json())["error"]["code"] == "unauthorized"
    status, _ = await post(api, order_request(), token="dev-token-0123456789x")
    assert status == 401
    assert await store.count() == 0


async def test_a_proposer_may_only_propose_its_kinds_to_its_audiences(
    api: Client, store: Store
) -> None:
    narrow = TOKENS["NARROW_AGENT_TOKEN"]
    status, reply = await post(api, order_request(), narrow)
    assert (status, reply["error"]["code"]) == (403, "kind_not_allowed")
    status, reply = await post(api, message_request(audience="treasury"), narrow)
    assert (status, reply["error"]["code"]) == (403, "audience_not_allowed")
    assert await store.count() == 0
    status, _ = await post(api, message_request(), narrow)
    assert status == 201


async def test_a_proposer_over_its_rate_gets_429_with_retry_after(
    client_for: ClientFactory, store: Store
) -> None:
    limited = await client_for(make_config(http={"proposer_rate_per_s": 0.1, "proposer_burst": 2}))
    statuses = []
    for _ in range(3):
        response = await limited.get("/api/v1/operations", headers=auth())
        statuses.append(response.status)
    assert statuses == [200, 200, 429]
    assert int(response.headers["Retry-After"]) >= 1


async def test_decimals_round_trip_digit_for_digit_through_api_and_store(
    api: Client, store: Store
) -> None:
    # every digit intake takes (15 before the point, 12 after), and trailing zeros, kept
    body = order_request("precise")
    body["payload"]["quantity"] = "0.010000000000"
    body["payload"]["limit_price"] = "60000.000000000000"
    body["payload"]["max_fee"] = "123456789012345.123456789012"
    status, view = await post(api, body)
    assert status == 201, view
    assert view["payload"]["quantity"] == "0.010000000000"
    assert view["payload"]["max_fee"] == "123456789012345.123456789012"
    stored = await store.get(view["id"])
    assert stored is not None
    assert stored.payload["max_fee"] == "123456789012345.123456789012"
    assert '"limit_price":"60000.000000000000"' in stored.envelope.payload


async def test_a_kind_that_is_not_a_venue_has_no_world(api: Client) -> None:
    status, view = await post(api, message_request("message-world"))
    assert status == 201, view
    assert (view["world"], view["simulated"]) == (None, False)
