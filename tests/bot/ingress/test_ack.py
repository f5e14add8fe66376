"""One ack budget: `lark.answer_budget_s`, and every deadline inside Lark's 3 s derived from it
in one place (bot/ingress/ack.py `AckTerms`), for the consumer and its transports alike.

The transports acking for a stuck consumer with these terms, over the real SDK and sandbox:
tests/bot/lark/test_stuck_consumer.py.
"""

from __future__ import annotations

import pytest

from bot.config import LarkSettings
from bot.ingress.ack import ACK_TRAVEL_S, ANSWER_BUDGET_S, LARK_ACK_S, AckTerms
from bot.ingress.callbacks import CallbackConsumer, CallbackSettings
from store import Store
from tests.support.clicks import APP_ID, OUR_TENANT

# from next to nothing to the setting's maximum
BUDGETS_S = (0.001, 0.3, 1.0, 1.9, 2.0, 2.1, 2.2)


@pytest.mark.parametrize("budget_s", BUDGETS_S)
def test_every_deadline_follows_the_budget_in_order_inside_lark_3_s(budget_s: float) -> None:
    LarkSettings(answer_budget_s=budget_s)  # a budget the setting accepts
    terms = AckTerms(budget_s)
    # the definitive answer, then "processing" or "busy", then the transports' net, then
    # the ack's way back: all before Lark gives up
    assert budget_s <= terms.record_deadline_s < terms.transport_deadline_s
    assert terms.transport_deadline_s + ACK_TRAVEL_S <= LARK_ACK_S + 1e-9


def test_the_default_budget_keeps_the_deadlines_as_they_were() -> None:
    assert LarkSettings().answer_budget_s == ANSWER_BUDGET_S == AckTerms().answer_budget_s
    terms = AckTerms()
    assert terms.record_deadline_s == pytest.approx(2.5)
    assert terms.transport_deadline_s == pytest.approx(2.7)


def test_a_smaller_budget_moves_every_deadline_after_it_earlier() -> None:
    small, middle, default = map(AckTerms, (0.3, 1.0, 2.0))
    assert small.record_deadline_s < middle.record_deadline_s < default.record_deadline_s
    assert small.transport_deadline_s < middle.transport_deadline_s < default.transport_deadline_s


def test_a_budget_that_leaves_no_time_to_ack_is_refused() -> None:
    for budget_s in (0.0, -1.0, LARK_ACK_S):
        with pytest.raises(ValueError, match="no time to ack"):
            AckTerms(budget_s)


@pytest.mark.parametrize("budget_s", [0.3, 1.0])
async def test_the_consumer_and_its_transports_wait_by_the_one_setting(
    store: Store, budget_s: float
) -> None:
    # as bot/app/server.py builds it: lark.answer_budget_s and cards.lang, nothing else
    consumer = CallbackConsumer(
        store,
        CallbackSettings(APP_ID, frozenset({OUR_TENANT}), "zh", answer_budget_s=budget_s),
    )
    terms = AckTerms(budget_s, "zh")
    assert consumer.ack == terms  # what the consumer waits for, and answers, before its decision
    # what a transport reads of it (bot/lark/ingress_port.py CallbackAck)
    assert consumer.transport_deadline_s == terms.transport_deadline_s
    assert consumer.processing() == terms.processing()
    assert consumer.processing()["toast"]["content"] == "已收到，处理中"
