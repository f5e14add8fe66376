"""POST /api/v1/operations under an approval policy: the requester never counts toward a
quorum, so a proposal whose approvers without its requester could never reach it is refused
at intake (422 approval_impossible), never filed to wait for what cannot come."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from store import Store
from tests.support.api import ClientFactory, make_config, post
from tests.support.factories import LARGE_ORDERS_RULE, TRIO_AUDIENCE, big_order, order_request

Client = TestClient[Any, Any]
TWO_OF_TWO = {"name": "ops", "chat_id": "oc_ops", "operators": ["ou_alice", "ou_bob"]}


def requested_by(body: dict[str, Any], open_id: str) -> dict[str, Any]:
    return {**body, "source": {"requester_open_id": open_id}}


def refused_as_impossible(status: int, reply: dict[str, Any]) -> None:
    assert status == 422, reply
    assert reply["error"]["code"] == "approval_impossible"
    [problem] = reply["error"]["fields"]
    assert problem["field"] == "source.requester_open_id"
    assert "needs 2 confirmation(s) from ou_alice, ou_bob" in problem["reason"]
    assert problem["fix"]


async def test_two_of_two_with_one_of_them_requesting_is_impossible(
    client_for: ClientFactory, store: Store
) -> None:
    api: Client = await client_for(
        make_config(audiences=[{**TWO_OF_TWO, "required_confirmations": 2}])
    )
    refused_as_impossible(*await post(api, requested_by(order_request("mine"), "ou_alice")))
    assert await store.count() == 0

    # requested by someone who is not an approver, both approvers remain: filed
    status, view = await post(api, requested_by(order_request("carols"), "ou_carol"))
    assert status == 201, view
    assert view["approval"]["required"] == 2


async def test_a_rules_narrowed_approvers_less_the_requester_must_still_reach_it(
    client_for: ClientFactory, store: Store
) -> None:
    """Above 50,000 only Alice and Bob, two of them: Alice may not propose it; below the
    amount one of three confirms, and her proposal is filed."""
    rule = {**LARGE_ORDERS_RULE, "operators": ["ou_alice", "ou_bob"]}
    api: Client = await client_for(make_config(audiences=[TRIO_AUDIENCE], approval_rules=[rule]))
    refused_as_impossible(*await post(api, requested_by(big_order("big-mine"), "ou_alice")))
    assert await store.count() == 0

    status, small = await post(api, requested_by(order_request("small-mine"), "ou_alice"))
    assert status == 201 and small["approval"]["required"] == 1, small


async def test_a_quorum_the_others_can_still_reach_is_filed(
    client_for: ClientFactory, store: Store
) -> None:
    api: Client = await client_for(
        make_config(audiences=[{**TRIO_AUDIENCE, "required_confirmations": 2}])
    )
    status, view = await post(api, requested_by(order_request("two-others"), "ou_alice"))
    assert status == 201, view
    assert view["approval"]["approvers"] == ["ou_alice", "ou_bob", "ou_carol"]
    assert await store.count() == 1
