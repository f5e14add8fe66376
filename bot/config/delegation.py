"""Whether a delegation may be granted, as the config says: the audience allows delegation,
the window is no longer than its longest, the delegator is one of its operators, the delegate
someone else, and who grants it is the delegator (an admin at the CLI may grant for anyone).
Pure; the store refuses what is never allowed and checks each click
(store/delegation/ledger.py, store/claims/delegation_sql.py)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from bot.config.settings import Settings
from kernel.problems import FieldProblem

OPEN_ID = re.compile(r"^ou_[A-Za-z0-9_-]{1,120}$")


def grant_problems(
    settings: Settings,
    audience_name: str,
    delegator: str,
    delegate: str,
    ends_at: datetime,
    now: datetime,
    *,
    by: str | None = None,
) -> list[FieldProblem]:
    """Why this grant may not be made (empty: it may). `by`: the person granting (None: an
    admin at the CLI)."""
    audience = settings.audience(audience_name)
    if audience is None:
        known = ", ".join(a.name for a in settings.audiences) or "none"
        return [FieldProblem("audience", f"no audience {audience_name!r}", f"use one of {known}")]
    problems: list[FieldProblem] = []
    longest = audience.delegation_max_days
    if longest is None:
        fix = f"set delegation_max_days on [[audiences]] {audience.name} to allow it"
        problems.append(FieldProblem("audience", f"{audience.name} allows no delegation", fix))
    if delegator not in audience.operators:
        problems.append(
            FieldProblem(
                "from",
                f"{delegator} is not an operator of {audience.name}",
                "only an operator's own right can be handed on",
            )
        )
    if not OPEN_ID.fullmatch(delegate):
        problems.append(FieldProblem("to", "not a Lark open id", "give the person's ou_… id"))
    elif delegate == delegator:
        problems.append(FieldProblem("to", "a right cannot be handed to oneself", "name another"))
    if by is not None and by != delegator:
        problems.append(
            FieldProblem("from", "only the holder may hand on their right", "ask an admin")
        )
    if ends_at <= now:
        problems.append(FieldProblem("until", "is not in the future", "give a later end"))
    elif longest is not None and ends_at - now > timedelta(days=longest):
        problems.append(
            FieldProblem(
                "until",
                f"is more than {longest} days away",
                f"{audience.name} allows at most {longest} days",
            )
        )
    return problems
