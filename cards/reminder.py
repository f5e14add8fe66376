"""The reminder before expiry: one line in the card's thread. Pure.

It names, as Lark mentions, the operators who may still act and have not: the approvers
who have not confirmed (never the requester, who cannot count), and says how long is left
and how far the confirmations are.
"""

from __future__ import annotations

from datetime import datetime, tzinfo

from cards.plain_text import TITLE_MAX_CHARS, people_text
from cards.strings import Lang, text
from cards.vocabulary import title_of
from kernel.display import clock
from kernel.timeutil import parse_iso_utc
from store import OperationView


def waiting_for(view: OperationView) -> list[str]:
    """The approvers who have not confirmed, the requester left out, in order."""
    confirmed = set(view.approval.confirmed_by)
    requester = view.source.requester_open_id
    return [
        open_id
        for open_id in view.approval.approvers
        if open_id not in confirmed and open_id != requester
    ]


def reminder_text(view: OperationView, *, lang: Lang, now: datetime, tz: tzinfo) -> str:
    expires = parse_iso_utc(view.expires_at)
    minutes = max(int((expires - now).total_seconds() // 60), 0)
    # the only markup in a reminder is the bot's own: mentions of the approvers it waits for
    who = " ".join(f'<at user_id="{open_id}"></at>' for open_id in waiting_for(view))
    approval = view.approval
    return text(
        "reminder",
        lang,
        title=people_text(title_of(view, lang), TITLE_MAX_CHARS, lang),
        minutes=str(minutes),
        at=clock(view.expires_at, tz),  # minutes away: the day goes without saying
        who=who,
        count=str(len(approval.confirmed_by)),
        required=str(approval.required),
    )
