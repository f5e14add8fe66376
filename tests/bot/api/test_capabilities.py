"""Admission against the venue adapter's capabilities, before any card exists.

The API reads the real simulated venue's capabilities; an order it could never execute is a
422 naming the field, and nothing is stored (so no card, no Confirm button). See
docs/architecture.md §6.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from store import Store, World
from tests.support.api import TOKENS, ClientFactory, make_config, post, settings_data
from tests.support.factories import ORDER_PAYLOAD, order_request
from workers.domains.finance.capability import capability_problems
from workers.domains.finance.runner import FinanceRunner
from workers.domains.finance.schema import FinanceOrderV1
from workers.domains.finance.settings import FinanceSettings
from workers.domains.finance.sim.venue import SimVenue
from workers.domains.finance.venues.model import Capabilities


def _with_payload(**changes: Any) -> dict[str, Any]:
    return order_request(payload={**ORDER_PAYLOAD, **changes})


async def test_an_instrument_the_venue_does_not_list_is_refused_before_any_card(
    client_for: ClientFactory, store: Store
) -> None:
    api = await client_for()
    status, reply = await post(api, _with_payload(instrument="DOGE-PERP"))
    assert status == 422, reply
    (problem,) = reply["error"]["fields"]
    assert problem["field"] == "payload.instrument"
    assert "DOGE-PERP" in problem["reason"] and "BTC-PERP" in problem["fix"]
    assert await store.count() == 0
    # the same body with a listed instrument is admitted: the venue's list is what refused it
    status, _ = await post(api, _with_payload(instrument="ETH-PERP"))
    assert status == 201 and await store.count() == 1


async def test_an_account_configured_here_but_not_held_by_the_venue_is_refused(
    client_for: ClientFactory, store: Store
) -> None:
    accounts = [
        {"name": "sim-main", "venue": "sim", "budget": "100000"},
        {"name": "sim-ghost", "venue": "sim", "budget": "100000"},  # the venue never opened it
    ]
    config = make_config(domains={**settings_data()["domains"], "finance": {"accounts": accounts}})
    api = await client_for(config)
    status, reply = await post(api, _with_payload(account="sim-ghost"))
    assert status == 422, reply
    assert [f["field"] for f in reply["error"]["fields"]] == ["payload.account"]
    assert "sim-ghost" in reply["error"]["fields"][0]["reason"]
    assert await store.count() == 0


async def test_without_the_adapter_attached_a_finance_proposal_fails_closed(
    client_for: ClientFactory, store: Store
) -> None:
    api = await client_for(capabilities={})
    status, reply = await post(api, order_request())
    assert status == 503 and reply["error"]["code"] == "capabilities_unavailable"
    assert await store.count() == 0


async def test_an_adapter_that_cannot_be_read_fails_closed(
    client_for: ClientFactory, store: Store, venue: SimVenue
) -> None:
    await venue.close()  # reading a closed venue raises
    api = await client_for()
    status, reply = await post(api, order_request())
    assert status == 503 and reply["error"]["code"] == "capabilities_unavailable"
    assert await store.count() == 0


async def test_a_proposer_that_may_not_propose_orders_gets_403_without_a_venue_read(
    client_for: ClientFactory, store: Store, venue: SimVenue
) -> None:
    await venue.close()  # a read would fail: a 403 proves none was made
    api = await client_for()
    status, reply = await post(api, order_request(), token=TOKENS["NARROW_AGENT_TOKEN"])
    assert status == 403 and reply["error"]["code"] == "kind_not_allowed"
    assert await store.count() == 0


def test_an_account_whose_mode_the_adapter_does_not_say_is_refused() -> None:
    order = FinanceOrderV1.model_validate(ADMITTED)
    silent = dataclasses.replace(CAPS, modes_by_account={})  # fails closed
    assert [p.field for p in capability_problems(order, silent)] == ["payload.account"]


def test_a_refused_account_does_not_list_the_venues_other_accounts() -> None:
    order = FinanceOrderV1.model_validate({**ADMITTED, "account": "sim-other"})
    [problem] = capability_problems(order, CAPS)
    assert "sim-main" not in problem.fix and "sim-hedge" not in problem.fix


CAPS = Capabilities(
    venue="sim",
    world=World.SIMULATED,
    accounts=frozenset({"sim-main", "sim-hedge"}),
    account_modes=frozenset({"one_way"}),
    instruments=frozenset({"BTC-PERP"}),
    order_types=frozenset({"limit"}),
    time_in_force=frozenset({"GTC"}),
    protective=False,
    modes_by_account={"sim-main": "one_way", "sim-hedge": "hedge"},
)
ADMITTED = {**ORDER_PAYLOAD, "time_in_force": "GTC"}
ADMITTED.pop("protective", None)


@pytest.mark.parametrize(
    ("changes", "caps", "field"),
    [
        ({"venue": "elsewhere"}, CAPS, "payload.venue"),
        ({"account": "sim-other"}, CAPS, "payload.account"),
        ({"account": "sim-hedge"}, CAPS, "payload.account"),
        ({"instrument": "ETH-PERP"}, CAPS, "payload.instrument"),
        (
            {"order_type": "market", "limit_price": None, "max_slippage_bps": "10"},
            CAPS,
            "payload.order_type",
        ),
        ({"time_in_force": "IOC"}, CAPS, "payload.time_in_force"),
        ({"protective": {"stop_loss": "50000"}}, CAPS, "payload.protective"),
    ],
    ids=["venue", "account", "account-mode", "instrument", "order-type", "tif", "protective"],
)
def test_each_capability_refuses_what_the_adapter_could_never_execute(
    changes: dict[str, Any], caps: Capabilities, field: str
) -> None:
    order = FinanceOrderV1.model_validate(
        {k: v for k, v in {**ADMITTED, **changes}.items() if v is not None}
    )
    problems = capability_problems(order, caps)
    assert [p.field for p in problems] == [field]
    assert all(p.reason and p.fix for p in problems)
    # the same order against an adapter that supports everything it asks for passes
    everything = dataclasses.replace(
        caps,
        venue=order.venue,
        accounts=caps.accounts | {order.account},
        account_modes=caps.account_modes | {"hedge"},
        instruments=caps.instruments | {order.instrument},
        order_types=caps.order_types | {order.order_type},
        time_in_force=caps.time_in_force | {order.time_in_force},
        protective=True,
        modes_by_account={order.account: "one_way", **caps.modes_by_account},
    )
    assert capability_problems(order, everything) == []


async def test_the_runners_reading_of_a_venue_that_cannot_be_read_fails_closed(
    client_for: ClientFactory, store: Store, venue: SimVenue
) -> None:
    """Through the finance runner's per-venue reading (what `run` attaches): the venue's
    failed read holds up its proposal (503, nothing stored), not the whole kind's reading;
    a readable venue files. (Two venues side by side: test_runner_venues.py.)"""
    runner = FinanceRunner({"sim": venue}, FinanceSettings(), clock=store.clock)
    api = await client_for(capabilities={"finance.order": runner.capabilities})
    status, reply = await post(api, order_request())
    assert status == 201, reply
    await venue.close()  # now it can no longer be read
    status, reply = await post(api, order_request())
    assert status == 503 and reply["error"]["code"] == "capabilities_unavailable", reply
    assert await store.count() == 1
