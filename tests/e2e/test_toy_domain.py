"""A domain plugs in with no change to the core: the toy lamp domain end to end.

`tests/support/toy_domain.py` is written only against the domain contract and registered
here, at run time, before the bot's config is loaded (its `[domains.toy]` table names its
lamps). Then the product's front door works for it as for the built-in kinds: propose
through the HTTP API, the card in the sandbox speaks the toy's words, an operator's click
through the sandbox claims it, its runner switches the lamp once with the stable client id,
a waiter for `final` waits through the toy's non-final "warming", and the original card
ends with the toy's outcome words.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest

from store import ExecutionLedger
from tests.support.cards import fields
from tests.support.processes import cli
from tests.support.stack import DEV_TOKEN, Stack, StackFactory, card_says, settled
from tests.support.toy_domain import LampService, ToyDomain
from tests.support.waiting import eventually
from workers.domains import DOMAINS, registered
from workers.domains.execution import client_id_for

TOY_TABLE = {"toy": {"lamps": ["desk", "hall"]}}
_counter = itertools.count()


@pytest.fixture
def lamps() -> Iterator[LampService]:
    """The toy registered for the test (before any stack is built: this fixture comes first,
    so it is also unregistered only after the bot has stopped). Lamps switched on stay
    warming until the test releases them."""
    service = LampService(held=True)
    with registered(ToyDomain(service)):
        yield service
    assert "toy.lamp" not in DOMAINS


def lamp_request(**payload: Any) -> dict[str, Any]:
    return {
        "request_id": f"lamp-{next(_counter)}",
        "kind": "toy.lamp",
        "payload": {"lamp": "desk", "state": "on", "brightness": 60, **payload},
        "audience": "ops",
        "expires_in_s": 900,
    }


@pytest.mark.parametrize("mode", ["ws", "webhook"])
async def test_a_lamp_is_proposed_confirmed_switched_once_and_the_card_ends_lit(
    lamps: LampService, make_stack: StackFactory, mode: str
) -> None:
    stack: Stack = await make_stack(mode, domains=TOY_TABLE)

    view, message_id = await stack.offered(lamp_request())
    words = view["terms"]["words"]
    assert words["title"] == {"en": "Switch a lamp", "zh": "开关灯"}
    card = stack.card(message_id)
    assert card["header"]["title"]["content"] == "Lamp to switch"
    assert card["header"]["title"]["i18n_content"]["zh_cn"] == "待开关的灯"
    grid = fields(card)
    assert grid["Lamp"] == "desk" and grid["Switch to"] == "on", grid
    assert grid["Brightness (%)"] == "60", grid
    assert {"灯", "切换为", "亮度（%）"} <= set(fields(card, "zh_cn")), fields(card, "zh_cn")
    assert "SIMULATED" in str(card["header"])  # the toy switches no lamp in the world

    reply = await stack.click(message_id, "ou_alice")
    assert reply["toast"]["type"] == "success", reply

    # switched once and warming: the executor keeps looking, and the card says so
    warming = await settled(stack, view["id"], "warming")
    assert warming["outcome"]["final"] is False and warming["outcome"]["tone"] == "working"
    await card_says(stack, message_id, "Warming up")
    assert stack.card(message_id)["header"]["template"] == "wathet"  # still working
    looks = len(lamps.looked_up)
    path = f"/api/v1/operations/{view['id']}?until=final&wait_s=60"
    waiter = asyncio.create_task(stack.api("GET", path))
    # two more looks at the warming lamp (each one backs off): a waiter that took "warming"
    # for final would have answered long before
    await eventually(lambda: len(lamps.looked_up) >= looks + 2 or waiter.done())
    assert not waiter.done(), waiter.result()

    lamps.release()
    status, final = await asyncio.wait_for(waiter, 90)
    assert status == 200, final
    assert final["outcome"]["status"] == "lit" and final["outcome"]["final"] is True
    assert final["outcome"]["words"] == {"en": "Lamp lit", "zh": "灯已点亮"}
    assert [o["status"] for o in final["outcomes"]] == ["warming", "lit"]
    assert final["state"] == "outcome_observed"

    client_id = client_id_for(view["id"])
    assert lamps.submits == [client_id]  # exactly one switch, with the stable client id
    attempt = await ExecutionLedger(stack.store).attempt(view["id"])
    assert attempt is not None and attempt.client_id == client_id

    # the CLI, another process where the toy is not registered, says it in the toy's words:
    # they travel with the data
    shown = await cli("show", view["id"], "--url", stack.bot_url, "--token", DEV_TOKEN)
    assert shown.code == 0, shown.err
    assert "outcome:   Lamp lit · SIMULATED" in shown.out, shown.out

    await card_says(stack, message_id, "Lamp lit", "Confirmed by <at id=ou_alice></at>")
    after = stack.card(message_id)
    assert after["header"]["template"] == "green"
    assert '"tag": "button"' not in json.dumps(after)


async def test_a_lamp_switched_off_ends_at_once_in_the_toys_words(
    lamps: LampService, make_stack: StackFactory
) -> None:
    stack: Stack = await make_stack("ws", domains=TOY_TABLE)
    view, message_id = await stack.offered(lamp_request(lamp="hall", state="off", brightness=None))
    assert "Brightness (%)" not in fields(stack.card(message_id))  # absent terms are not shown
    await stack.click(message_id, "ou_bob")

    path = f"/api/v1/operations/{view['id']}?until=final&wait_s=60"
    status, final = await stack.api("GET", path)
    assert status == 200 and final["outcome"]["status"] == "off", final
    await card_says(stack, message_id, "Lamp switched off")
    assert lamps.submits == [client_id_for(view["id"])]


async def test_a_payload_outside_the_toys_schema_is_a_422_naming_the_field_and_nothing_is_stored(
    lamps: LampService, make_stack: StackFactory
) -> None:
    stack: Stack = await make_stack("ws", domains=TOY_TABLE)

    status, refused = await stack.post("/api/v1/operations", lamp_request(state="dim"))
    assert status == 422, refused
    assert [p["field"] for p in refused["error"]["fields"]] == ["payload.state"], refused

    status, refused = await stack.post("/api/v1/operations", lamp_request(brightness=150))
    assert status == 422, refused
    assert [p["field"] for p in refused["error"]["fields"]] == ["payload.brightness"], refused

    # inside the schema, but no such lamp in [domains.toy]: the toy's own admit says so
    status, refused = await stack.post("/api/v1/operations", lamp_request(lamp="attic"))
    assert status == 422, refused
    [problem] = refused["error"]["fields"]
    assert problem["field"] == "payload.lamp" and "desk, hall" in problem["fix"], problem

    assert list((await stack.store.list_operations(limit=10)).items) == []
    assert [m for m in stack.state.messages.values() if m.msg_type == "interactive"] == []
    assert lamps.submits == []
