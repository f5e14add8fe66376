"""Every surface marks the world an operation acts in (design principle 8), as clearly as
SIMULATED: an operation filed in world EMULATOR, by a test domain whose `world()` says so
(tests/support/world_toy.py: no venue's code), is EMULATOR on the card's header tag and its
outcome title, in the API's view (`world`, beside `simulated`: nothing of it leaves this
machine), the MCP result, `countersign show` and `list`, the dashboard's list and detail,
and the text listener's `pending` and `status`; in zh, 仿真. Its executor is the one its
`executor()` named, bound into the digest and run because the runner says it runs it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from bot.agents.mcp.results import proposed
from cards.world import WORLD_COLOUR
from store import OperationView, World
from tests.support.dashboard import text_of
from tests.support.processes import cli
from tests.support.stack import DEV_TOKEN, Stack, StackFactory, card_says, settled
from tests.support.toy_domain import LampService
from tests.support.waiting import eventually
from tests.support.world_toy import EMULATED_EXECUTOR, WorldLamp
from workers.domains import DOMAINS, registered
from workers.domains.execution import client_id_for

TOY_TABLE = {"toy": {"lamps": ["desk", "hall"]}}


@pytest.fixture
def lamps() -> Iterator[LampService]:
    """The emulated lamp registered before the stack is built (unregistered after it stops)."""
    service = LampService()
    with registered(WorldLamp(service)):
        yield service
    assert "toy.lamp" not in DOMAINS


def switch_off(request_id: str) -> dict[str, Any]:
    return {
        "request_id": request_id,
        "kind": "toy.lamp",
        "payload": {"lamp": "hall", "state": "off"},
        "audience": "ops",
        "expires_in_s": 900,
    }


async def page(stack: Stack, path: str) -> str:
    async with stack.http.get(f"{stack.bot_url}{path}") as response:
        assert response.status == 200, path
        return await response.text()


def replies_to(stack: Stack, message_id: str) -> list[str]:
    return [
        json.loads(m.content)["text"]
        for m in stack.state.messages.values()
        if m.parent_id == message_id and m.sender_type == "app"
    ]


async def answer_to(stack: Stack, said: str) -> str:
    status, sent = await stack.control(
        "POST", "/chats/oc_ops/messages", {"sender": "ou_bob", "text": said, "mention_bot": True}
    )
    assert status == 201, sent
    await eventually(lambda: bool(replies_to(stack, sent["message_id"])), woken_by=stack.state)
    [reply] = replies_to(stack, sent["message_id"])
    return reply


async def test_an_emulated_operation_says_emulator_on_every_surface(
    lamps: LampService, make_stack: StackFactory
) -> None:
    stack: Stack = await make_stack("ws", domains=TOY_TABLE)

    # the API's view and the MCP result: the world beside `simulated`
    view, message_id = await stack.offered(switch_off("emulated-lamp"))
    assert (view["world"], view["simulated"]) == ("emulator", True)
    assert (view["executor"]["name"], view["executor"]["revision"]) == EMULATED_EXECUTOR
    typed = OperationView.model_validate(view)
    assert typed.world is World.EMULATOR
    mcp = proposed(typed, created=True).model_dump(mode="json")
    assert (mcp["world"], mcp["simulated"]) == ("emulator", True)

    # the card's header tag, in every locale, in the emulator's colour
    [tag] = stack.card(message_id)["header"]["text_tag_list"]
    assert tag["text"]["content"] == "EMULATOR"
    assert tag["text"]["i18n_content"] == {"en_us": "EMULATOR", "zh_cn": "仿真"}
    assert tag["color"] == WORLD_COLOUR[World.EMULATOR]
    assert "SIMULATED" not in json.dumps(stack.card(message_id))

    # the text listener, while it waits
    pending = await answer_to(stack, "pending")
    assert f"{view['id']} Lamp hall off [EMULATOR]" in pending, pending
    status = await answer_to(stack, f"status {view['id']}")
    assert status.splitlines()[0] == f"{view['id']}: Lamp hall off [EMULATOR]", status

    # confirmed: run once on the executor it was confirmed for, the outcome in its world
    await stack.click(message_id, "ou_alice")
    final = await settled(stack, view["id"], "off")
    assert final["world"] == "emulator"
    assert lamps.submits == [client_id_for(view["id"])]
    await card_says(stack, message_id, "Lamp switched off · EMULATOR")
    assert "灯已关闭 · 仿真" in json.dumps(stack.card(message_id), ensure_ascii=False)

    # the CLI: another process, where the lamp is not registered (the world is in the data)
    shown = await cli("show", view["id"], "--url", stack.bot_url, "--token", DEV_TOKEN)
    assert shown.code == 0, shown.err
    first = shown.out.splitlines()[0]
    assert first.startswith(view["id"]) and first.endswith("  EMULATOR"), shown.out
    assert "outcome:   Lamp switched off · EMULATOR" in shown.out, shown.out
    listed = await cli("list", "--url", stack.bot_url, "--token", DEV_TOKEN)
    assert listed.code == 0, listed.err
    [row] = [line for line in listed.out.splitlines() if line.startswith(view["id"])]
    assert row.endswith("Lamp hall off  EMULATOR"), listed.out

    # the dashboard: the list and the detail page, in en and zh
    listing = await page(stack, "/ops/all")
    assert '<span class="sim world-emulator">EMULATOR</span>' in listing
    detail = await page(stack, f"/ops/{view['id']}")
    assert '<span class="sim world-emulator">EMULATOR</span>' in detail
    assert text_of(detail, "outcome") == "Lamp switched off · EMULATOR"
    assert "SIMULATED" not in detail
    zh = await page(stack, f"/ops/{view['id']}?lang=zh")
    assert '<span class="sim world-emulator">仿真</span>' in zh
    assert text_of(zh, "outcome") == "灯已关闭 · 仿真"
