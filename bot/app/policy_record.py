"""The effective policy, recorded on every start, and a change of it announced.

countersign reads its config once, at start (a changed config takes effect by restarting
each replica), so "on every start" is "on every change": the policy now is digested and,
when it differs from the last version recorded, becomes the next version, with what
changed in words and an audit entry (store/policy/ledger.py). The replica that recorded it
then posts those lines into each audience's chat; a version not announced yet (the process
stopped first) is posted by the next start, and the message's uuid keeps replicas that
post the same version to one message.
"""

from __future__ import annotations

import hashlib
import logging
import socket

from bot.config.policy_document import policy_changes, snapshot
from bot.config.settings import Settings
from cards.stored_words import stored_policy_line
from cards.strings import Lang
from store import POLICY_ACTOR_PREFIX, PolicyLedger, PolicyLine, PolicyVersion, Store
from workers.audit_witness import TextPoster

log = logging.getLogger("countersign.policy")

RECORD_TRIES = 5
MAX_LINES = 20  # a chat line stays short; the dashboard's history holds them all

WORDS: dict[str, dict[Lang, str]] = {
    "changed": {
        "en": "countersign: the approval policy changed (version {seq}, recorded by {actor} "
        "at {at}):",
        "zh": "countersign：审批策略已变更（第 {seq} 版，由 {actor} 于 {at} 记录）：",
    },
    "more": {
        "en": "… and {count} more on the dashboard's policy history.",
        "zh": "……另有 {count} 项，见控制台的策略历史。",
    },
    "stale": {
        "en": "Cards of {audience} posted before this change are stale: a click on them is "
        "refused; ask for the operation again.",
        "zh": "此前发到 {audience} 的卡片已失效：点击将被拒绝，请重新发起操作。",
    },
}


def policy_actor() -> str:
    """Who recorded a version: the config, as read on this host (whoever edited the file is
    not known to the bot; the host names where to look)."""
    return f"{POLICY_ACTOR_PREFIX}{socket.gethostname()}"[:160]


async def record_policy(store: Store, settings: Settings, actor: str) -> PolicyVersion | None:
    """Record the policy `settings` hold if it differs from the last version; the version
    recorded, or None (unchanged, or another replica recorded the same one first)."""
    ledger = PolicyLedger(store)
    now = snapshot(settings)
    for _ in range(RECORD_TRIES):
        latest = await ledger.latest()
        if latest is not None and latest.digest == now.digest:
            return None
        before = latest.document if latest is not None else None
        lines = [
            PolicyLine(change.audience, change.text)
            for change in policy_changes(before, now.document, settings.people)
        ]
        seq = latest.seq + 1 if latest is not None else 1
        # the first version is a record, not a change: nothing to tell the chats
        recorded = await ledger.add(
            seq, now.digest, now.document, lines, now.audiences, actor, announce=latest is not None
        )
        if recorded:
            log.info("policy version %d recorded (%d changes)", seq, len(lines))
            return await ledger.version(seq)
    raise RuntimeError(f"the policy could not be recorded in {RECORD_TRIES} tries")


def announcement(
    version: PolicyVersion, audience: str, lines: list[str], stale: bool, lang: Lang
) -> str:
    """What an audience's chat reads about a version."""
    at = version.at.strftime("%Y-%m-%d %H:%M UTC")
    said = [WORDS["changed"][lang].format(seq=version.seq, actor=version.actor, at=at)]
    # stored in English: worded in the chat's language (cards/stored_words.py)
    said += [f"• {stored_policy_line(line, lang)}" for line in lines[:MAX_LINES]]
    if len(lines) > MAX_LINES:
        said.append(WORDS["more"][lang].format(count=len(lines) - MAX_LINES))
    if stale:
        said.append(WORDS["stale"][lang].format(audience=audience))
    return "\n".join(said)


def announcement_uuid(seq: int, chat_id: str) -> str:
    """Lark's idempotency key: replicas posting one version into a chat make one message."""
    chat = hashlib.sha256(chat_id.encode()).hexdigest()[:12]
    return f"cs-policy-v{seq}-{chat}"


async def announce_policy(
    store: Store, lark: TextPoster, outside_chats: frozenset[str], lang: Lang
) -> int:
    """Post every version not announced yet into its audiences' chats (never a chat that
    outsiders read); how many messages were posted."""
    ledger = PolicyLedger(store)
    posted = 0
    for version in await ledger.unannounced():
        before = await ledger.version(version.seq - 1)
        audiences = version.document.get("audiences", {})
        for name, audience in sorted(audiences.items()):
            chat_id = audience["chat_id"]
            lines = version.lines_for(name)
            if not lines or chat_id in outside_chats:
                continue
            earlier = before.audiences.get(name) if before is not None else None
            stale = earlier is not None and earlier != version.audiences[name]
            text = announcement(version, name, lines, stale, lang)
            await lark.send_text(chat_id, text, announcement_uuid(version.seq, chat_id))
            posted += 1
        await ledger.announced(version.seq)
    return posted
