"""Whether a delegation may be granted, as the config says: the audience allows delegation,
the window is no longer than its longest, the delegator is one of its operators, the delegate
someone else, and who grants it is the delegator (an admin at the CLI may grant for anyone).
Pure; the store refuses what is never allowed and checks each click
(store/delegation/ledger.py, store/claims/delegation_sql.py)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from bot.config.settings import Settings
from cards.strings import Lang, text
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
    lang: Lang = "en",
) -> list[FieldProblem]:
    """Why this grant may not be made (empty: it may), in `lang` (the chat's and the
    dashboard's language; the CLI's English). `by`: the person granting (None: an admin at
    the CLI)."""

    def problem(field: str, key: str, **values: str) -> FieldProblem:
        return FieldProblem(
            field,
            text(f"delegation.problem.{key}", lang, **values),
            text(f"delegation.fix.{key}", lang, **values),
        )

    audience = settings.audience(audience_name)
    if audience is None:
        known = ", ".join(a.name for a in settings.audiences) or "none"
        return [problem("audience", "no_audience", audience=audience_name, known=known)]
    name = audience.name
    problems: list[FieldProblem] = []
    longest = audience.delegation_max_days
    if longest is None:
        problems.append(problem("audience", "not_allowed", audience=name))
    if delegator not in audience.operators:
        problems.append(problem("from", "not_an_operator", person=delegator, audience=name))
    if not OPEN_ID.fullmatch(delegate):
        problems.append(problem("to", "not_an_open_id"))
    elif delegate == delegator:
        problems.append(problem("to", "oneself"))
    if by is not None and by != delegator:
        problems.append(problem("from", "not_the_holder"))
    if ends_at <= now:
        problems.append(problem("until", "past"))
    elif longest is not None and ends_at - now > timedelta(days=longest):
        problems.append(problem("until", "too_long", days=str(longest), audience=name))
    return problems
