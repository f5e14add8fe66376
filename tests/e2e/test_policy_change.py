"""A policy changed in the config makes the cards filed under the old one stale, with real
`countersign run` processes against the sandbox: the card's digest is still the operation's,
but the audience's policy digest it was filed with is not the one configured now, so a
Confirm on it is refused as `policy_changed` (never claimed), and what is proposed under
the new config is confirmable as the new policy says. The change is recorded as the
policy's next version: the audience's chat is told what changed, and the dashboard's
history and the stale operation's page name the change that made it stale."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import aiohttp

from cards.strings import refusal_text
from kernel.reasons import Reason
from store import State, Store
from tests.support.backends import Backend
from tests.support.bot_processes import (
    BotProcess,
    Lark,
    bot_env,
    bot_processes,
    connected,
    offer,
    sandbox_alone,
    write_config,
)
from tests.support.factories import LARGE_ORDERS_RULE, TRIO_AUDIENCE, big_order
from tests.support.processes import free_port
from tests.support.waiting import eventually

TRIO = TRIO_AUDIENCE
LARGE = LARGE_ORDERS_RULE
LOWERED = {**LARGE, "above": "40000"}  # the same rule, a lower threshold: another policy


async def connections(lark: Lark, expected: int) -> bool:
    """Whether the sandbox holds `expected` long connections for the app (it hands each
    click to one of them: a click must not go to the bot that was stopped)."""
    status, apps = await lark.control("GET", "/apps")
    assert status == 200, apps
    [app] = [item for item in apps["items"] if item["app_id"] == lark.app.app_id]
    return bool(app["connections"] == expected)


CHANGE = "rule large-orders: above: 50000 → 40000"


def chat_texts(lark: Lark, chat_id: str) -> list[str]:
    return [
        json.loads(message.content)["text"]
        for message in lark.state.messages.values()
        if message.chat_id == chat_id and message.msg_type == "text"
    ]


async def page(bot: BotProcess, path: str) -> str:
    async with aiohttp.ClientSession() as http, http.get(f"{bot.url}{path}") as response:
        assert response.status == 200, path
        return await response.text()


def element(html: str, element_id: str) -> str:
    """The text of the element with `element_id` (tags stripped)."""
    found = re.search(rf'<(\w+)[^>]*\bid="{element_id}"[^>]*>(.*?)</\1>', html, re.S)
    assert found is not None, f"no #{element_id}"
    return re.sub(r"<[^>]+>", "", found.group(2)).strip()


async def click(lark: Lark, message_id: str, operator: str) -> dict[str, Any]:
    status, reply = await lark.control(
        "POST", f"/messages/{message_id}/click", {"operator": operator, "button": "confirm"}
    )
    assert status == 200, reply
    assert reply["status"] == "answered", reply
    return reply


async def test_a_policy_changed_in_config_makes_an_old_card_stale(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    async with sandbox_alone() as lark, bot_processes() as start:
        env = bot_env(lark.app)

        async def start_with(name: str, rule: dict[str, Any]) -> BotProcess:
            config = write_config(
                tmp_path / name,
                backend,
                lark.app,
                free_port(),
                "ws",
                audiences=[TRIO],
                approval_rules=[rule],
            )
            bot = await start(config, env)
            await eventually(lambda: connected(bot), deadline_s=30)
            await eventually(lambda: connections(lark, 1), woken_by=lark.state)
            return bot

        # filed under the first policy: 2 of 3, above 50,000 USDC
        first = await start_with("before.toml", LARGE)
        old, old_card = await offer(first, lark, store, big_order("filed-before"))
        assert old["approval"]["required"] == 2
        assert old["approval"]["threshold"] == "50,000 USDC"
        assert await first.terminate() == 0
        await eventually(lambda: connections(lark, 0), woken_by=lark.state)

        # the rule changed: the operation still asks what it asked, under a policy gone
        second = await start_with("after.toml", LOWERED)
        stale = await click(lark, old_card, "ou_alice")
        assert stale["toast"]["type"] == "error"
        assert stale["toast"]["content"] == refusal_text(Reason.POLICY_CHANGED)
        assert stale["card_changed"] is False

        async def refusal_recorded() -> bool:
            return bool(await store.confirmations(old["id"]))

        await eventually(refusal_recorded)
        records = await store.confirmations(old["id"])
        assert [(c.operator_open_id, c.accepted, c.reason_code) for c in records] == [
            ("ou_alice", False, Reason.POLICY_CHANGED.value)
        ]
        assert await store.claim_count(old["id"]) == 0

        # the change is version 2: told in the audience's chat, on the dashboard's history,
        # and on the stale operation's page as what made its card stale
        def told() -> bool:
            return any(CHANGE in said for said in chat_texts(lark, TRIO["chat_id"]))

        await eventually(told, woken_by=lark.state)
        [line] = [said for said in chat_texts(lark, TRIO["chat_id"]) if CHANGE in said]
        assert "version 2" in line and "Cards of ops posted before this change are stale" in line
        assert not any(CHANGE in said for chat in ("oc_acme",) for said in chat_texts(lark, chat))
        history = await page(second, "/ops/policy")
        assert "first policy recorded" in element(history, "v1")
        assert CHANGE in element(history, "v2")
        stale_page = await page(second, f"/ops/{old['id']}")
        assert element(stale_page, "policy-filed") == "version 1"
        assert CHANGE in element(stale_page, "policy-changed-v2")
        after = await store.get(old["id"])
        assert after is not None
        assert after.state is State.AWAITING_CONFIRMATION and after.confirmed_by == ()
        assert after.confirm_digest == old["confirm_digest"]  # stale by policy, not by terms

        # proposed under the new config: its policy is current, and two confirm it
        new, new_card = await offer(second, lark, store, big_order("filed-after"))
        assert new["approval"]["required"] == 2
        assert new["approval"]["threshold"] == "40,000 USDC"
        counted = await click(lark, new_card, "ou_alice")
        assert counted["toast"]["type"] == "success", counted
        assert await store.claim_count(new["id"]) == 0
        claimed = await click(lark, new_card, "ou_bob")
        assert claimed["toast"]["type"] in ("success", "info"), claimed  # info: "processing"

        async def claimed_once() -> bool:
            return await store.claim_count(new["id"]) == 1

        await eventually(claimed_once)
        accepted = [
            (c.operator_open_id, c.accepted, c.reason_code)
            for c in await store.confirmations(new["id"])
        ]
        assert accepted == [("ou_alice", True, None), ("ou_bob", True, None)]
        new_page = await page(second, f"/ops/{new['id']}")
        assert element(new_page, "policy-filed") == "version 2"
        assert 'id="policy-changed-' not in new_page
        # the stale card was not touched by anything the new one did
        assert await store.claim_count(old["id"]) == 0
        assert len(await store.confirmations(old["id"])) == 1
        assert await second.terminate() == 0
