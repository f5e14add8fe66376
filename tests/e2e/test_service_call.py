"""service.call end to end: the real bot, the sandbox driven through the unmodified lark-oapi
SDK, the real store, and the example billing service (examples/service) on loopback.

Propose a refund through the API; the card shows its arguments with the schema's titles; an
operator confirms in the sandbox; the service receives exactly one signed call, books the
refund once, and the card shows its answer. An answer lost after the work is reconciled by
the status endpoint with that one call; a call held past the timeout is fenced by the status
endpoint, concluded never sent, and refused when it arrives; a service that cannot be asked
leaves it to a person;
the receiver refuses a forged or replayed call; arguments outside the schema are a 422; and
a refund above a rule's amount needs the rule's quorum.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from examples.service.app import CALL_PATH, STATUS_PATH
from tests.support.cards import fields
from tests.support.mcp_client import call, connected
from tests.support.processes import ROOT
from tests.support.service_calls import (
    SECRET,
    SECRET_ENV,
    BillingService,
    Hold,
    billing_service,
    refund_request,
    service_table,
)
from tests.support.stack import DEV_TOKEN, OPS_AUDIENCE, Stack, StackFactory, card_says, settled
from workers.domains.execution import client_id_for

TRIO = {"name": "ops", "chat_id": "oc_ops", "operators": ["ou_alice", "ou_bob", "ou_carol"]}
LARGE_REFUNDS = {
    "name": "large-refunds",
    "kinds": ["service.call"],
    "above": "1000",
    "currency": "USD",
    "required_confirmations": 2,
}


@pytest.fixture
async def billing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[BillingService]:
    # the workers read the signing secret from the environment, as in a deployment
    monkeypatch.setenv(SECRET_ENV, SECRET)
    async with billing_service(tmp_path) as service:
        yield service


async def stack_calling(
    make_stack: StackFactory, billing: BillingService, mode: str = "ws", **options: Any
) -> Stack:
    table = options.pop("table", None) or service_table(billing)
    stack: Stack = await make_stack(mode, domains={"service": table}, **options)
    return stack


async def replay(billing: BillingService, post: dict[str, Any], body: bytes) -> tuple[int, Any]:
    """Send a captured call again, as an attacker who saw it would."""
    headers = {
        name: value
        for name, value in post["headers"].items()
        if name.lower().startswith("x-countersign") or name in ("Idempotency-Key",)
    }
    headers["Content-Type"] = "application/json"
    async with (
        aiohttp.ClientSession() as http,
        http.post(billing.call_url, data=body, headers=headers) as response,
    ):
        return response.status, await response.json()


@pytest.mark.parametrize("mode", ["ws", "webhook"])
async def test_confirm_sends_one_signed_call_and_the_card_shows_its_answer(
    billing: BillingService, make_stack: StackFactory, mode: str
) -> None:
    stack = await stack_calling(make_stack, billing, mode)
    view, message_id = await stack.offered(refund_request())
    assert view["terms"]["title"] == "Refund · billing"
    grid = fields(stack.card(message_id))
    assert grid["Refund amount"] == "120.00 USD", grid
    assert grid["Order"] == "ord_1042" and grid["Reason"] == "damaged", grid
    assert grid["Called at"] == billing.call_url, grid
    assert "SIMULATED" not in str(stack.card(message_id)["header"])  # it calls a real service
    assert billing.posts() == []  # nothing before a person confirms

    reply = await stack.click(message_id, "ou_alice")
    assert reply["toast"]["type"] == "success", reply
    done = await settled(stack, view["id"], "completed")
    assert done["outcome"]["final"] is True and done["outcome"]["tone"] == "good"

    [post] = billing.posts()  # exactly one call
    key = client_id_for(view["id"])
    assert post["headers"]["Idempotency-Key"] == key
    call = post["body"]
    assert call["confirm_digest"] == done["confirm_digest"]
    assert call["confirmed_by"] == [{"open_id": "ou_alice", "name": "ou_alice"}]  # no [people]
    assert call["claim_id"]
    [booked] = billing.refunds()  # verified, booked once
    assert booked["key"] == key
    answer = done["outcome"]["detail"]["answer"]
    assert f"rf_{key[-10:]}" in answer
    await card_says(stack, message_id, "Done by the service", f"rf_{key[-10:]}")

    # the same signed request again: the stored answer, not a second refund
    captured = billing.billing.received[0]
    status, again = await replay(billing, captured, captured["body"])
    assert status == 200 and again["refund_id"] == f"rf_{key[-10:]}"
    # a forged one (the amount changed under the captured signature): refused, nothing booked
    forged = json.dumps({**call, "arguments": {**call["arguments"], "amount": "4999.00"}}).encode()
    status, refused = await replay(billing, captured, forged)
    assert status == 401, refused
    assert len(billing.refunds()) == 1


async def test_an_answer_lost_after_the_work_is_reconciled_by_status_with_one_call(
    billing: BillingService, make_stack: StackFactory
) -> None:
    billing.billing.fail_after_work = 1
    stack = await stack_calling(make_stack, billing)
    view, message_id = await stack.offered(refund_request())
    await stack.click(message_id, "ou_alice")

    done = await settled(stack, view["id"], "completed")
    assert [o["status"] for o in done["outcomes"]] == ["unknown", "completed"]
    assert done["outcome"]["detail"]["reconciled_by"] == "status"
    assert len(billing.posts()) == 1 and len(billing.refunds()) == 1
    await card_says(stack, message_id, "Done by the service")


async def test_a_call_held_past_the_timeout_is_fenced_not_submitted_and_never_runs(
    billing: BillingService, make_stack: StackFactory
) -> None:
    hold = Hold()
    billing.billing.delay = hold  # the call reaches the service and waits there
    table = service_table(billing)
    table["services"][0]["timeout_s"] = 1.0
    # unfenced, "never received" would take not_found_after_s: only the fence settles it now
    stack = await stack_calling(
        make_stack, billing, table=table, execution={"not_found_after_s": 3600}
    )
    view, message_id = await stack.offered(refund_request())
    await stack.click(message_id, "ou_alice")

    done = await settled(stack, view["id"], "not_submitted")
    assert hold.arrived.is_set()
    assert [o["status"] for o in done["outcomes"]] == ["unknown", "not_submitted"]
    assert done["outcome"]["final"] is True
    assert "fenced the key" in done["outcome"]["detail"]["reason"]
    await card_says(stack, message_id, "Not executed")

    hold.release.set()  # the call goes on, after countersign said it never arrived
    [late] = await billing.answers(CALL_PATH, 1)
    assert late.status == 409 and billing.refunds() == []  # refused, nothing booked
    [fence] = {heard.query.get("fence") for heard in billing.answered(STATUS_PATH)}
    assert fence == "1"


async def test_without_a_status_endpoint_an_unknown_call_is_left_to_a_person(
    billing: BillingService, make_stack: StackFactory
) -> None:
    billing.billing.fail_after_work = 1
    stack = await stack_calling(make_stack, billing, table=service_table(billing, status=False))
    view, message_id = await stack.offered(refund_request())
    assert fields(stack.card(message_id))["If the answer is lost"].startswith("not idempotent")
    await stack.click(message_id, "ou_alice")

    done = await settled(stack, view["id"], "unresolved")
    assert [o["status"] for o in done["outcomes"]] == ["unknown", "unresolved"]
    reason = done["outcome"]["detail"]["reason"]
    assert "a person must check whether billing ran refund" in reason
    assert client_id_for(view["id"]) in reason
    assert len(billing.posts()) == 1  # never sent again
    await card_says(stack, message_id, "a person must check")


async def test_an_argument_outside_the_schema_is_a_422_naming_it_and_nothing_is_stored(
    billing: BillingService, make_stack: StackFactory
) -> None:
    stack = await stack_calling(make_stack, billing)
    status, refused = await stack.post(
        "/api/v1/operations", refund_request(amount="9000.00", coupon="FREE")
    )
    assert status == 422, refused
    named = {p["field"]: p for p in refused["error"]["fields"]}
    assert set(named) == {"payload.arguments.amount", "payload.arguments.coupon"}, named
    assert "above the maximum 5000" in named["payload.arguments.amount"]["reason"]
    status, refused = await stack.post("/api/v1/operations", refund_request(amount=12))
    assert status == 422, refused
    [problem] = refused["error"]["fields"]
    assert problem["field"] == "payload.arguments.amount", problem

    assert list((await stack.store.list_operations(limit=10)).items) == []
    assert [m for m in stack.state.messages.values() if m.msg_type == "interactive"] == []
    assert billing.posts() == []


async def test_a_refund_above_the_rules_amount_needs_the_rules_quorum(
    billing: BillingService, make_stack: StackFactory
) -> None:
    stack = await stack_calling(
        make_stack, billing, audiences=[TRIO], approval_rules=[LARGE_REFUNDS]
    )
    small = await stack.propose(refund_request(amount="50.00", order_id="ord_small"))
    assert small["approval"]["required"] == 1 and small["approval"]["rule"] is None

    view, message_id = await stack.offered(refund_request(amount="2500.00", order_id="ord_big"))
    assert view["approval"]["required"] == 2 and view["approval"]["rule"] == "large-refunds"
    assert view["approval"]["notional"] == "2500.00 USD"  # as filed; every surface groups it
    await card_says(stack, message_id, "2,500.00 USD")
    assert "2500.00 USD" not in json.dumps(stack.card(message_id), ensure_ascii=False)
    await card_says(stack, message_id, "Needs 2 of 3 operators — above 1,000.00 USD")

    await stack.click(message_id, "ou_alice")
    assert await stack.store.claim_count(view["id"]) == 0
    await card_says(stack, message_id, "1 of 2 confirmed")
    assert billing.posts() == []  # one confirmation is not enough to call

    await stack.click(message_id, "ou_bob")
    await settled(stack, view["id"], "completed")
    [post] = billing.posts()
    assert [p["open_id"] for p in post["body"]["confirmed_by"]] == ["ou_alice", "ou_bob"]


async def test_a_call_goes_only_to_its_services_audience_and_expires_as_its_action_says(
    billing: BillingService, make_stack: StackFactory
) -> None:
    leads = {"name": "leads", "chat_id": "oc_leads", "operators": ["ou_carol"]}
    table = service_table(billing)
    table["services"][0]["actions"][0]["expires_in_s"] = 600
    stack = await stack_calling(make_stack, billing, table=table, audiences=[OPS_AUDIENCE, leads])
    status, refused = await stack.post(
        "/api/v1/operations", {**refund_request(), "audience": "leads"}
    )
    assert status == 422, refused
    [problem] = refused["error"]["fields"]
    assert problem["field"] == "audience" and "ops" in problem["fix"], problem
    assert list((await stack.store.list_operations(limit=10)).items) == []

    view = await stack.propose(refund_request())  # no expires_in_s: the action's
    lasts = datetime.fromisoformat(view["expires_at"]) - datetime.fromisoformat(view["created_at"])
    assert timedelta(seconds=599) <= lasts <= timedelta(seconds=600)  # expiry: whole seconds


async def test_the_unchanged_mcp_server_lists_the_kind_with_each_actions_schema(
    billing: BillingService, make_stack: StackFactory
) -> None:
    stack = await stack_calling(make_stack, billing)
    # `countersign mcp` reads config.example.toml, whose [domains.service] declares the refund
    env = {"COUNTERSIGN_CONFIG": str(ROOT / "config.example.toml")}
    async with connected("stdio", stack.bot_url, DEV_TOKEN, env=env) as agent:
        kinds = (await agent.list_tools()).tools
        [propose] = [tool for tool in kinds if tool.name == "propose_operation"]
        assert "service.call" in propose.input_schema["properties"]["kind"]["enum"]
        read = await agent.read_resource("countersign://kinds/service.call")
        [contents] = read.contents
        described = json.loads(contents.text)  # type: ignore[union-attr]
        [refund_call] = described["payload_schema"]["oneOf"]
        assert refund_call["title"] == "Refund · billing"
        arguments = refund_call["properties"]["arguments"]
        assert arguments["properties"]["amount"]["x-amount"] is True
        titles = [spec["title"] for spec in arguments["properties"].values()]
        assert titles == ["Order", "Refund amount", "Reason"]  # the card's labels, in order
        assert described["examples"][0]["payload"] == refund_request()["payload"]

        # the bot's own checks, through the MCP tool: the example passes, a bad amount is named
        failed, checked = await call(
            agent,
            "check_operation",
            kind="service.call",
            payload=refund_request()["payload"],
            audience="ops",
        )
        assert not failed and checked["admissible"], checked
        failed, refused = await call(
            agent,
            "check_operation",
            kind="service.call",
            payload=refund_request(amount="-5")["payload"],
            audience="ops",
        )
        assert failed and [p["field"] for p in refused["fields"]] == ["payload.arguments.amount"]
    assert billing.posts() == []
