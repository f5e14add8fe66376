"""finance.order's rules across fields (issue 36): reported with its fields' own problems, all
at once, each at the field to change with its fix; a valid payload validates as before."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from bot.config.validation import problems_from
from kernel.canonical import canonical_json
from tests.support.factories import ORDER_PAYLOAD
from workers.domains.finance.examples import EXAMPLES
from workers.domains.finance.schema import FinanceOrderV1


def problems(payload: dict[str, Any]) -> dict[str, tuple[str, str]]:
    with pytest.raises(ValidationError) as refused:
        FinanceOrderV1.model_validate(payload)
    found = problems_from(refused.value, "payload")
    return {problem.field: (problem.reason, problem.fix) for problem in found}


def without(payload: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: value for name, value in payload.items() if name not in names}


def test_a_bad_side_does_not_hide_a_missing_limit_price() -> None:
    found = problems({**without(ORDER_PAYLOAD, "limit_price"), "side": "hold"})
    assert set(found) == {"payload.side", "payload.limit_price"}
    assert found["payload.limit_price"] == (
        "a limit order needs limit_price",
        "add limit_price or use order_type market",
    )
    assert all(found["payload.side"])


def test_every_price_rule_of_a_market_order_is_named_at_its_own_field() -> None:
    market = {**ORDER_PAYLOAD, "order_type": "market", "time_in_force": "POST_ONLY"}
    found = problems({**market, "quantity": "0.01x"})
    assert set(found) == {
        "payload.quantity",
        "payload.max_slippage_bps",
        "payload.limit_price",
        "payload.time_in_force",
    }
    assert all(
        reason and "order_type" in fix
        for field, (reason, fix) in found.items()
        if field != "payload.quantity"
    )


def test_an_empty_protective_is_named_beside_a_misspelt_field() -> None:
    found = problems({**ORDER_PAYLOAD, "protective": {"stop_lost": "57000"}})
    assert set(found) == {"payload.protective.stop_lost", "payload.protective"}
    reason, fix = found["payload.protective"]
    assert "stop_loss, take_profit or both" in reason and "leave protective out" in fix


def test_an_order_type_neither_limit_nor_market_is_its_own_fields_problem_alone() -> None:
    assert set(problems({**ORDER_PAYLOAD, "order_type": "stop"})) == {"payload.order_type"}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.name)
def test_a_valid_payload_validates_to_the_same_terms(example: Any) -> None:
    order = FinanceOrderV1.model_validate(example.payload)
    assert FinanceOrderV1.model_validate(order) == order
    dumped = order.model_dump(mode="python", exclude_none=True)
    assert canonical_json(dumped) == canonical_json(example.payload)
