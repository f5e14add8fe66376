"""An action's arguments against its JSON Schema, and what the domain makes of a call: every
problem named by its path, the card's terms labelled from the schema, the amount."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest

from tests.support.service_calls import refund, service_table, settings_of
from workers.domains import DOMAINS
from workers.domains.base import Amount
from workers.domains.service.arguments import argument_problems, schema_problems
from workers.domains.service.examples import REFUND_ARGUMENTS
from workers.domains.service.schema import ServiceCallV1

PLUGIN = DOMAINS["service.call"]
SETTINGS = settings_of(service_table(None))


def call(**arguments: Any) -> ServiceCallV1:
    return ServiceCallV1.model_validate(refund(**arguments))


def fields(problems: list[Any]) -> list[str]:
    return [problem.field for problem in problems]


def test_good_arguments_pass() -> None:
    assert PLUGIN.admit(call(), SETTINGS) == []


def test_every_problem_is_named_by_its_path_with_a_fix() -> None:
    arguments = {"order_id": "nope", "amount": 12, "reason": "bored", "coupon": "X"}
    problems = argument_problems(REFUND_ARGUMENTS, arguments)
    assert fields(problems) == [
        "payload.arguments.amount",
        "payload.arguments.coupon",
        "payload.arguments.order_id",
        "payload.arguments.reason",
    ]
    by_field = {problem.field: problem for problem in problems}
    assert "is not of type string" in by_field["payload.arguments.amount"].reason
    assert "not an argument" in by_field["payload.arguments.coupon"].reason
    assert "order_id, amount, reason" in by_field["payload.arguments.coupon"].fix
    assert "damaged" in by_field["payload.arguments.reason"].fix
    # a value out of its form is said in words, never by the schema's pattern
    order_id = by_field["payload.arguments.order_id"]
    assert order_id.reason == "nope is not in the form it needs", order_id
    assert "^" not in order_id.reason + order_id.fix and "[" not in order_id.reason + order_id.fix
    assert all(problem.fix for problem in problems)


def test_a_missing_argument_is_named_itself() -> None:
    problems = argument_problems(REFUND_ARGUMENTS, {"order_id": "ord_1"})
    assert fields(problems) == ["payload.arguments.amount", "payload.arguments.reason"]
    assert {problem.reason for problem in problems} == {"is required"}


@pytest.mark.parametrize(
    ("amount", "why"),
    [
        ("1e3", "not a plain decimal"),
        ("0.00", "below the minimum 0.01"),
        ("5000.01", "above the maximum 5000"),
    ],
)
def test_a_decimal_amount_is_plain_and_in_its_bounds(amount: str, why: str) -> None:
    [problem] = argument_problems(REFUND_ARGUMENTS, {**refund()["arguments"], "amount": amount})
    assert problem.field == "payload.arguments.amount" and why in problem.reason


def test_unknown_service_and_action_list_the_known_ones() -> None:
    [service] = PLUGIN.admit(
        ServiceCallV1.model_validate({**refund(), "service": "payroll"}), SETTINGS
    )
    assert service.field == "payload.service" and "billing" in service.fix
    [action] = PLUGIN.admit(
        ServiceCallV1.model_validate({**refund(), "action": "delete"}), SETTINGS
    )
    assert action.field == "payload.action" and "refund" in action.fix


def test_the_card_shows_each_argument_in_schema_order_with_its_title_and_where_it_goes() -> None:
    payload = call()
    projection = PLUGIN.project(payload)
    additions = PLUGIN.preconditions(payload, SETTINGS, None)
    assert additions["title"] == "Refund · billing"
    terms = {t["name"]: t for t in projection["terms"] + additions["terms"]}
    names = list(terms)
    assert names[:5] == [
        "service",
        "action",
        "arguments.order_id",
        "arguments.amount",
        "arguments.reason",
    ]
    assert terms["arguments.amount"]["value"] == "120.00 USD"
    assert terms["arguments.amount"]["label"] == {"en": "Refund amount", "zh": "退款金额"}
    assert terms["service"]["label"] == {"en": "Service", "zh": "服务"}
    assert terms["endpoint"]["value"] == SETTINGS.services[0].endpoint
    assert terms["idempotent"]["value"].startswith("not idempotent")
    assert projection["simulated"] is False and projection["words"]["title"]["en"]


def test_an_idempotent_service_says_so_on_the_card() -> None:
    settings = settings_of(service_table(None, idempotent=True))
    additions = PLUGIN.preconditions(call(), settings, None)
    [idempotent] = [t for t in additions["terms"] if t["name"] == "idempotent"]
    assert idempotent["value"] == "idempotent: retried with the same key"


def test_the_amount_is_the_marked_argument_in_its_currency() -> None:
    assert PLUGIN.moves_amount
    assert PLUGIN.notional(call(amount="75.5"), SETTINGS, None) == Amount(Decimal("75.5"), "USD")
    unmarked = copy.deepcopy(REFUND_ARGUMENTS)
    unmarked["properties"]["amount"].pop("x-amount")  # type: ignore[index,union-attr]
    table = service_table(None)
    table["services"][0]["actions"][0]["arguments"] = unmarked
    assert PLUGIN.notional(call(), settings_of(table), None) is None


def test_config_problems_name_a_bad_schema_and_an_inside_endpoint() -> None:
    table = service_table(None)
    billing = table["services"][0]
    billing["allow_internal"] = False
    schema = billing["actions"][0]["arguments"]
    schema["properties"]["amount"]["x-currency"] = None
    schema["properties"]["note"] = {"type": "string"}  # no title
    problems = PLUGIN.config_problems(settings_of(table))
    assert fields(problems) == [
        "services[0].endpoint",
        "services[0].status_endpoint",
        "services[0].actions[0].arguments.properties.note",
        "services[0].actions[0].arguments.properties.amount",
    ]
    assert "loopback" in problems[0].reason and "allow_internal" in problems[0].fix


def test_a_schema_that_is_no_json_schema_is_refused() -> None:
    [problem] = schema_problems({"type": "object", "properties": {"a": {"type": 5}}}, "here")
    assert problem.field == "here" and "not a valid JSON Schema" in problem.reason


def test_plain_http_is_for_loopback_only() -> None:
    table = service_table(None, endpoint="http://billing.example.com/call", status=False)
    [problem] = PLUGIN.config_problems(settings_of(table))
    assert problem.field == "services[0].endpoint" and "https" in problem.reason


def test_agents_see_each_configured_action_with_its_arguments_schema() -> None:
    schema = PLUGIN.payload_schema(SETTINGS)
    [refund_call] = schema["oneOf"]
    assert refund_call["title"] == "Refund · billing"
    assert refund_call["properties"]["service"] == {"const": "billing"}
    assert refund_call["properties"]["arguments"] == REFUND_ARGUMENTS
    bare = PLUGIN.payload_schema(settings_of({"services": []}))
    assert set(bare["properties"]) == {"service", "action", "arguments"}
