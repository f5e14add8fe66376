"""message.send's words: the card's title and headlines, a label per term, and what each
outcome status says (words, tone, finality)."""

from __future__ import annotations

from collections.abc import Mapping

from store import Tone
from workers.domains.words import KindWords, Meaning, Said

WORDS = KindWords(
    title=Said("Approve outbound message", "批准外发消息"),
    waiting=Said("Message to approve", "待批准消息"),
    partly=Said(
        "Message to approve — {count} of {required} confirmed",
        "待批准消息 — 已确认 {count}/{required}",
    ),
    terms={
        "destination": Said("Destination", "目的地"),
        "counterparty": Said("Counterparty", "对方"),
        "priority": Said("Priority", "优先级"),
        "reply_to": Said("Reply to", "回复"),
        "text": Said("Text", "正文"),
        "mentions": Said("This message will mention", "此消息将提及"),
        "baseline": Said("Baseline check", "基线核对"),
        "answers": Said("Answers", "回复的消息"),
        "text_sha256": Said("Text SHA-256", "正文 SHA-256"),
    },
)

SENT = "sent"
REJECTED = "rejected"  # the outcome's word, not the operation's state (store.State)

OUTCOMES: Mapping[str, Meaning] = {
    SENT: Meaning(Said("Sent", "已发送"), Tone.GOOD, final=True),
    # Lark refused the send for good (a chat the bot left, a message too long)
    REJECTED: Meaning(
        Said("Refused by Lark — not sent", "飞书拒绝 — 未发送"), Tone.BAD, final=True
    ),
}
