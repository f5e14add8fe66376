"""A policy version's change lines in zh: stored in English (the ledger keeps them as
bot/config/policy_document.py words them), worded at render time (cards/stored_words.py) on
the dashboard's policy history, an operation's "changed since" fact, and the announcement
a zh-configured chat reads; English reads as stored. Two versions recorded in the store."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from bot.api.dashboard_html import Chrome, policy_html
from bot.api.dashboard_policy import FiledUnder, policy_facts
from bot.api.dashboard_words import Now
from bot.app.policy_record import announce_policy, record_policy
from bot.config import Settings, parse
from store import PolicyLedger, Store
from tests.support.api import settings_data
from tests.support.zh_sweep import config_words, english_left, html_texts, words_of

PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob", "ou_carol": "Carol", "ou_dave": "Dave"}
LARGE = {
    "name": "large-orders",
    "kinds": ["finance.order"],
    "above": "50000",
    "currency": "USDC",
    "required_confirmations": 2,
}
NOW = datetime(2026, 12, 7, 8, 30, tzinfo=UTC)


def settings(edit: Any = None) -> Settings:
    data = copy.deepcopy({**settings_data(), "approval_rules": [LARGE], "people": PEOPLE})
    if edit is not None:
        edit(data)
    return parse(data)


def changes(config: dict[str, Any]) -> None:
    config["audiences"][0]["operators"].append("ou_dave")
    config["audiences"][0]["operators"].remove("ou_bob")
    config["audiences"][0]["required_confirmations"] = 2
    config["approval_rules"][0]["above"] = "40000"


class Chat:
    """What the bot posts into the chats (workers/audit_witness.py TextPoster)."""

    def __init__(self) -> None:
        self.said: dict[str, str] = {}

    async def send_text(self, receive_id: str, text: str, uuid: str) -> str:
        self.said[receive_id] = text
        return f"om_{len(self.said)}"


def allowed(after: Settings) -> set[str]:
    return config_words(PEOPLE, after.model_dump(mode="json")) | words_of("config:host-a")


async def test_a_policy_change_reads_in_chinese_in_the_chat_and_on_the_dashboard(
    store: Store,
) -> None:
    await record_policy(store, settings(), "config:host-a")
    after = settings(changes)
    second = await record_policy(store, after, "config:host-a")
    assert second is not None
    assert [line.text for line in second.changes] == [  # stored in English, as it was
        "audience ops: operators: added Dave (ou_dave); removed Bob (ou_bob)",
        "audience ops: required_confirmations: 1 → 2",
        "rule large-orders: above: 50000 → 40000",
    ]
    keep = allowed(after)

    chat = Chat()
    assert await announce_policy(store, chat, frozenset(), "zh") == 2  # ops and treasury
    announced = chat.said["oc_ops"]
    assert english_left(announced, keep) == [], announced
    assert "• 审批群 ops：操作员：新增 Dave (ou_dave)；移除 Bob (ou_bob)" in announced
    assert "• 审批群 ops：所需确认数：1 → 2" in announced
    assert "• 规则 large-orders：金额阈值：50000 → 40000" in announced
    assert "• 规则 large-orders：金额阈值：50000 → 40000" in chat.said["oc_treasury"]

    versions = await PolicyLedger(store).history()
    page = policy_html(versions, Chrome("zh", "0", "/ops/policy"), NOW)
    left = {text: english_left(text, keep) for text in html_texts(page)}
    assert {text: words for text, words in left.items() if words} == {}
    assert "审批群 ops：所需确认数：1 → 2" in html_texts(page)
    assert "首次记录的策略" in html_texts(page)

    first = await PolicyLedger(store).version(1)
    assert first is not None
    facts = policy_facts(FiledUnder("ops", first, [second]), Now(NOW), "zh")
    said = " ".join(str(cell) for _, cell in facts)
    assert "审批群 ops：所需确认数：1 → 2" in said, said
    assert "required_confirmations" not in said, said


async def test_english_reads_as_stored(store: Store) -> None:
    await record_policy(store, settings(), "config:host-a")
    await record_policy(store, settings(changes), "config:host-a")
    chat = Chat()
    await announce_policy(store, chat, frozenset(), "en")
    assert "• audience ops: required_confirmations: 1 → 2" in chat.said["oc_ops"]
    page = policy_html(await PolicyLedger(store).history(), Chrome("en", "0", "/ops/policy"), NOW)
    assert "rule large-orders: above: 50000 → 40000" in html_texts(page)
    assert "first policy recorded" in html_texts(page)
