"""The dashboard's delegations page (`/ops/delegations`): what is in force, who may end it,
and the grant form for a signed-in operator. Pure; the posts are bot/api/web_delegation.py's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.api.dashboard_words import Now, ident, moment
from bot.api.web_delegation import GrantChoice, may_end
from cards.strings import Lang
from cards.vocabulary import person, when
from kernel.timeutil import iso_utc
from store import Delegation


def delegation_rows(
    delegations: Sequence[Delegation],
    viewer: str | None,
    people: Mapping[str, str],
    now: Now,
    lang: Lang,
) -> list[dict[str, Any]]:
    return [
        {
            "id": d.id,
            "ident": ident(d.id, short=True),
            "audience": d.audience,
            "delegate": person(d.delegate, people),
            "delegator": person(d.delegator, people),
            "until": {
                **(moment(iso_utc(d.ends_at), now, lang) or {}),
                "text": when(iso_utc(d.ends_at), now.tz),
            },
            "by": d.created_by,
            "may_end": viewer is not None and may_end(d, viewer),
        }
        for d in delegations
    ]


def grant_form(
    choices: Sequence[GrantChoice], viewer: str, people: Mapping[str, str]
) -> dict[str, Any] | None:
    """The grant form: the audiences this person may delegate in, and the people known by
    name (anyone else by their open id)."""
    if not choices:
        return None
    return {
        "audiences": [{"name": c.audience, "max_days": c.max_days} for c in choices],
        "max_days": max(c.max_days for c in choices),
        "people": [
            {"open_id": open_id, "name": name}
            for open_id, name in sorted(people.items(), key=lambda item: item[1])
            if open_id != viewer
        ],
    }
