"""Lark's rules around clicks, through the unmodified SDK: a card being clicked cannot be
patched, clicks stop after 14 days (2.0) or 30 days (1.0), forwarded copies are clickable only
when the card says so, and each push goes to a random one of the app's connections."""

from __future__ import annotations

import itertools
import random
from typing import Any

from aiohttp import web
from lark_oapi.core.token.manager import TokenManager  # type: ignore[import-untyped]

from larksandbox.longconn import LongConnHub, _Conn
from larksandbox.state import default_state
from tests.support.receivers import Receiver
from tests.support.sandbox import (
    Sandbox,
    card_content,
    lark_client,
    patch_request,
    sdk,
    send_card,
    v2_card,
)

DAY_S = 86400


def v1_card(title: str = "Confirm order") -> dict[str, Any]:
    return {
        "config": {"update_multi": True},
        "header": {"title": {"tag": "plain_text", "content": title}},
        "elements": [
            {
                "tag": "action",
                "actions": [
                    {
                        "tag": "button",
                        "text": {"tag": "plain_text", "content": "Confirm"},
                        "value": {"action": "confirm"},
                    }
                ],
            }
        ],
    }


async def click(sandbox: Sandbox, message_id: str, operator: str = "ou_alice") -> Any:
    return await sandbox.control(
        "POST", f"/messages/{message_id}/click", {"operator": operator, "button": "Confirm"}
    )


def locked_refusal(response: Any) -> bool:
    return bool(
        response.code == 230099
        and response.raw.status_code == 400
        and "ErrCode: 11310" in response.msg
        and "card action is lock" in response.msg
    )


# -- 1. a card being clicked refuses patches ----------------------------------------------------


async def test_a_card_being_clicked_refuses_patches_until_its_answer_and_a_while_after(
    sandbox: Sandbox, receiver: Receiver
) -> None:
    client = lark_client(sandbox)
    message_id = (await send_card(client)).data.message_id
    new_content = card_content(v2_card("Confirmed", buttons=False))
    during: list[Any] = []

    def answer(_data: Any) -> dict[str, Any]:
        # the SDK's blocking patch, from the handler's thread, while Lark waits for this answer
        during.append(client.im.v1.message.patch(patch_request(message_id, new_content)))
        return {"toast": {"type": "info", "content": "working on it"}}

    receiver.answer = answer
    # a long window after the answer, so "still locked after the answer" needs no timing
    await sandbox.control("POST", "/faults", {"card_lock_after_answer_ms": 600_000})
    status, reply = await click(sandbox, message_id)
    assert status == 200 and reply["status"] == "answered", reply
    assert len(during) == 1 and locked_refusal(during[0]), (during[0].code, during[0].msg)

    after = await sdk(client.im.v1.message.patch, patch_request(message_id, new_content))
    assert locked_refusal(after), (after.code, after.msg)
    _, view = await sandbox.control("GET", f"/messages/{message_id}")
    assert view["locked"] is True and len(view["history"]) == 1
    assert [r["code"] for r in view["refused_patches"]] == [230099, 230099]
    assert "card action is lock" in view["refused_patches"][0]["msg"]

    # the window is read when a patch comes: shortening it frees the card at once
    await sandbox.control("POST", "/faults", {"card_lock_after_answer_ms": 0})
    _, view = await sandbox.control("GET", f"/messages/{message_id}")
    assert view["locked"] is False
    landed = await sdk(client.im.v1.message.patch, patch_request(message_id, new_content))
    assert landed.code == 0, landed.msg
    assert sandbox.state.messages[message_id].content == new_content


async def test_a_held_card_refuses_patches_until_released_and_1_0_cards_are_never_locked(
    sandbox: Sandbox,
) -> None:
    client = lark_client(sandbox)
    message_id = (await send_card(client)).data.message_id
    content = card_content(v2_card("Later"))
    status, hold = await sandbox.control("POST", f"/messages/{message_id}/lock", {"hold": True})
    assert status == 200 and hold == {
        "message_id": message_id,
        "held": True,
        "in_flight": 0,
        "locked": True,
    }
    refused = await sdk(client.im.v1.message.patch, patch_request(message_id, content))
    assert locked_refusal(refused), (refused.code, refused.msg)

    status, released = await sandbox.control(
        "POST", f"/messages/{message_id}/lock", {"hold": False}
    )
    assert status == 200 and released["locked"] is False
    assert (await sdk(client.im.v1.message.patch, patch_request(message_id, content))).code == 0

    # the documented lock is of JSON 2.0 cards
    v1_id = (await send_card(client, v1_card())).data.message_id
    await sandbox.control("POST", f"/messages/{v1_id}/lock", {"hold": True})
    patched = await sdk(
        client.im.v1.message.patch, patch_request(v1_id, card_content(v1_card("Later")))
    )
    assert patched.code == 0, patched.msg

    status, error = await sandbox.control("POST", f"/messages/{message_id}/lock", {"hold": "yes"})
    assert status == 422 and error["error"]["code"] == "invalid_hold"
    status, error = await sandbox.control("POST", "/faults", {"card_lock_after_answer_ms": -1})
    assert status == 422 and error["error"]["code"] == "invalid_fault"


# -- 2. clicks and updates only within 14 days (2.0) --------------------------------------------


async def test_a_2_0_card_takes_clicks_and_patches_for_14_days(
    sandbox: Sandbox, receiver: Receiver
) -> None:
    client = lark_client(sandbox)
    message_id = (await send_card(client)).data.message_id
    await sandbox.control("POST", "/faults", {"card_lock_after_answer_ms": 0})
    await sandbox.control("POST", "/clock", {"advance_s": 14 * DAY_S - 60})
    status, reply = await click(sandbox, message_id)
    assert status == 200 and reply["status"] == "answered", reply
    assert receiver.cards.get_nowait().event.context.open_message_id == message_id

    await sandbox.control("POST", "/clock", {"advance_s": 120})
    status, refused = await click(sandbox, message_id)
    assert status == 409 and refused["error"]["code"] == "card_expired", refused
    assert "14" in refused["error"]["message"] and "无法进行互动" in refused["error"]["message"]
    assert receiver.cards.empty(), "nothing reached the app"
    _, view = await sandbox.control("GET", f"/messages/{message_id}")
    assert len(view["clicks"]) == 1

    TokenManager.cache.cache.clear()  # the old token expired on the sandbox's clock
    old = await sdk(
        client.im.v1.message.patch, patch_request(message_id, card_content(v2_card("late")))
    )
    assert old.code == 230031


async def test_a_1_0_card_takes_clicks_for_30_days_but_updates_only_for_14(
    sandbox: Sandbox, receiver: Receiver
) -> None:
    message_id = (await send_card(lark_client(sandbox), v1_card())).data.message_id
    receiver.answer = lambda _data: {
        "toast": {"type": "success", "content": "done"},
        "card": {"type": "raw", "data": v1_card("Confirmed")},
    }
    await sandbox.control("POST", "/clock", {"advance_s": 20 * DAY_S})
    status, reply = await click(sandbox, message_id)
    assert status == 200 and reply["status"] == "answered", reply
    assert reply["toast"]["content"] == "done" and reply["card_changed"] is False
    assert sandbox.state.messages[message_id].card() == v1_card()

    await sandbox.control("POST", "/clock", {"advance_s": 11 * DAY_S})
    status, refused = await click(sandbox, message_id)
    assert status == 409 and refused["error"]["code"] == "card_expired"
    assert "30" in refused["error"]["message"]
    assert receiver.cards.qsize() == 1


# -- 4. one random connection per push ----------------------------------------------------------


def _conns(hub: LongConnHub, app_id: str, count: int) -> None:
    hub._conns[app_id] = [
        _Conn(app_id, f"d{n}", n + 1, web.WebSocketResponse(), live=True) for n in range(count)
    ]


async def test_dispatch_is_random_by_default_and_round_robin_on_request(
    sandbox: Sandbox,
) -> None:
    _, apps = await sandbox.control("GET", "/apps")
    assert apps["dispatch"] == "random"

    hub = LongConnHub(default_state(), rng=random.Random(20261202))
    _conns(hub, "cli_x", 3)
    picks = [hub._pick("cli_x").device_id for _ in range(300)]
    assert set(picks) == {"d0", "d1", "d2"}
    assert any(a == b for a, b in itertools.pairwise(picks)), "not taken in turn"

    hub.dispatch = "round_robin"
    assert [hub._pick("cli_x").device_id for _ in range(6)] == ["d0", "d1", "d2"] * 2

    status, settings = await sandbox.control("POST", "/dispatch", {"mode": "round_robin"})
    assert status == 200 and settings["dispatch"] == "round_robin"
    assert sandbox.hub.longconn.dispatch == "round_robin"
