"""The chain head witnessed outside the store: a short line posted into each audience's chat
(once a day, and on demand), which an edit of the store cannot also edit. `audit verify FILE
--witness` reads those lines back from Lark and checks the export against them: a chain
rewritten after an edit (every hash recomputed, so `verify --store` holds) no longer
matches the head Lark kept.

Pure: the line's words, reading one back, and the message's idempotency key."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import date, datetime

from kernel.timeutil import iso_utc

HEAD_LINE = re.compile(r"countersign audit chain head: entry (\d+), sha256 ([0-9a-f]{64})\b")


def witness_text(seq: int, entry_hash: str, at: datetime) -> str:
    """What the ops chat reads (and `verify --witness` parses back)."""
    return (
        f"countersign audit chain head: entry {seq}, sha256 {entry_hash}, at {iso_utc(at)}. "
        "Keep this message: `countersign audit verify FILE --witness` checks an export "
        "against it."
    )


def witnessed_head(text: str) -> tuple[int, str] | None:
    """(entry, hash) from a head line, or None for any other text."""
    found = HEAD_LINE.search(text)
    return (int(found.group(1)), found.group(2)) if found else None


def witness_uuid(day: date, chat_id: str, seq: int) -> str:
    """Lark's idempotency key (at most 50 characters): replicas posting the same head the
    same day into a chat make one message."""
    chat = hashlib.sha256(chat_id.encode()).hexdigest()[:12]
    return f"cs-head-{day:%Y%m%d}-{chat}-{seq}"


@dataclass(frozen=True)
class Witness:
    """A head line as Lark holds it."""

    seq: int
    entry_hash: str
    chat_id: str
    message_id: str
    posted_at: str  # ISO-8601 UTC, from Lark's create_time
