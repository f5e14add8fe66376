"""The chat in zh: every answer of the text listener in Chinese, through the sandbox and the
unmodified SDK (the card's language, `[cards] lang = "zh"`, is the chat's)."""

from __future__ import annotations

import json

from tests.support.stack import Stack, StackFactory
from tests.support.waiting import eventually
from tests.support.zh_sweep import config_words, english_left

PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob", "ou_carol": "Carol"}
OPS = {
    "name": "ops",
    "chat_id": "oc_ops",
    "operators": ["ou_alice", "ou_carol"],
    "delegation_max_days": 14,
}
BOB = '<at user_id="ou_bob"></at>'


async def command(stack: Stack, sender: str, text: str) -> str:
    status, sent = await stack.control(
        "POST", "/chats/oc_ops/messages", {"sender": sender, "text": text, "mention_bot": True}
    )
    assert status == 201, sent

    def replies() -> list[str]:
        return [
            json.loads(m.content)["text"]
            for m in stack.state.messages.values()
            if m.parent_id == sent["message_id"] and m.sender_type == "app"
        ]

    await eventually(lambda: bool(replies()), woken_by=stack.state)
    [reply] = replies()
    return reply


async def test_every_chat_answer_is_in_chinese(make_stack: StackFactory) -> None:
    stack = await make_stack("ws", audiences=[OPS], people=PEOPLE, cards={"lang": "zh"})
    answers = {
        "help": await command(stack, "ou_alice", "help"),
        "health": await command(stack, "ou_alice", "health"),
        "pending": await command(stack, "ou_alice", "pending"),
        "no delegations": await command(stack, "ou_alice", "delegations"),
        "no one named": await command(stack, "ou_alice", "delegate 3d"),
        "no span": await command(stack, "ou_alice", f"delegate {BOB}"),
        "too long": await command(stack, "ou_alice", f"delegate {BOB} 30d"),
        "not an operator": await command(stack, "ou_bob", f"delegate {BOB} 3d"),
        "granted": await command(stack, "ou_alice", f"delegate {BOB} 3d"),
        "listed": await command(stack, "ou_alice", "delegations"),
        "ended": await command(stack, "ou_alice", "undelegate"),
        "none of yours": await command(stack, "ou_alice", "undelegate"),
    }
    for said, reply in answers.items():
        assert english_left(reply, config_words(PEOPLE, {"audiences": [OPS]})) == [], (said, reply)
    # and they say what they must, in Chinese
    assert answers["granted"].startswith("已委托：Bob 代 Alice，至 "), answers["granted"]
    assert "超过 14 天" in answers["too long"], answers["too long"]
    assert answers["health"].startswith("总体：就绪"), answers["health"]
    assert "卡片点击" in answers["health"], answers["health"]
