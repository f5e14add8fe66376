"""The audit chain's head, witnessed in Lark: once a day at `[audit] witness_at` (the cards'
time zone) a short line with the head's entry and hash goes into each audience's chat
(store/audit/witness.py says why). `countersign audit witness` posts one now.

Every replica runs one; the line's uuid is the day's, the chat's and the head's, so replicas
that read the same head post one message (Lark dedupes a uuid for an hour)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from datetime import datetime, time, timedelta, tzinfo
from typing import Protocol

from kernel.timeutil import Clock
from store import AuditChain, witness_text, witness_uuid

log = logging.getLogger("countersign.audit")


class TextPoster(Protocol):
    async def send_text(self, receive_id: str, text: str, uuid: str) -> str: ...


async def witness_head(
    chain: AuditChain, lark: TextPoster, chats: Sequence[str], now: datetime
) -> tuple[int, list[str]]:
    """Post the head into each chat: (the head's entry, the messages' ids); nothing while
    the chain is empty."""
    seq, entry_hash = await chain.head()
    if seq == 0:
        return 0, []
    text = witness_text(seq, entry_hash, now)
    posted = [
        await lark.send_text(chat, text, witness_uuid(now.date(), chat, seq)) for chat in chats
    ]
    log.info("audit chain head (entry %d) witnessed in %d chats", seq, len(posted))
    return seq, posted


def next_witness(now: datetime, at: time, tz: tzinfo) -> datetime:
    """The first moment after `now` that the clock in `tz` reads `at`."""
    local = now.astimezone(tz)
    due = datetime.combine(local.date(), at, tzinfo=tz)
    return due if due > local else datetime.combine(local.date() + timedelta(days=1), at, tzinfo=tz)


async def run_audit_witness(
    chain: AuditChain,
    lark: TextPoster,
    chats: Sequence[str],
    stop: asyncio.Event,
    *,
    at: time,
    tz: tzinfo,
    clock: Clock,
    poll_s: float,
) -> None:
    """Witness the head each day at `at`; the clock is looked at every `poll_s` (a failed
    post is tried again at the next look)."""
    due = next_witness(clock(), at, tz)
    while not stop.is_set():
        now = clock()
        if now >= due:
            try:
                await witness_head(chain, lark, chats, now)
            except Exception:  # Lark or the store down: the next look tries again
                log.exception("witnessing the audit chain head failed; retrying in %.0fs", poll_s)
            else:
                due = next_witness(now, at, tz)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), poll_s)
