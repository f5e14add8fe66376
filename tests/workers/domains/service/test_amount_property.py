"""The amount a call moves is exactly the decimal the proposer wrote (approval rules compare
it): for any plain decimal string, the notional is that Decimal to the last digit, and the
argument passes the schema exactly when it lies within the action's x-minimum/x-maximum."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.service_calls import refund, service_table, settings_of
from workers.domains import DOMAINS
from workers.domains.service.arguments import argument_problems
from workers.domains.service.examples import REFUND_ARGUMENTS
from workers.domains.service.schema import ServiceCallV1

PLUGIN = DOMAINS["service.call"]
SETTINGS = settings_of(service_table(None))
LOW, HIGH = Decimal("0.01"), Decimal("5000")  # the example action's bounds

amounts = st.decimals(
    min_value=Decimal("-100000"), max_value=Decimal("100000"), allow_nan=False, places=4
) | st.decimals(min_value=Decimal("0"), max_value=Decimal("6000"), allow_nan=False, places=2)


@settings(max_examples=300, deadline=None)
@given(amounts)
def test_the_amount_is_the_written_decimal_and_its_bounds_are_exact(value: Decimal) -> None:
    written = f"{value:f}"
    arguments = {**refund()["arguments"], "amount": written}
    problems = argument_problems(REFUND_ARGUMENTS, arguments)
    assert (problems == []) == (LOW <= Decimal(written) <= HIGH), (written, problems)
    if problems:
        assert [problem.field for problem in problems] == ["payload.arguments.amount"]
        return
    call = ServiceCallV1.model_validate(refund(amount=written))
    notional = PLUGIN.notional(call, SETTINGS, None)
    assert notional is not None and notional.currency == "USD"
    assert notional.value == Decimal(written) and str(notional.value) == written
