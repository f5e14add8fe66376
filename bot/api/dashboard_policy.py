"""The dashboard's policy history (`/ops/policy`) and, on an operation's page, which policy
version it was filed under and what changed it since. Pure; the reads are
store/policy/ledger.py's, the page bot/api/dashboard_html.py's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.api.dashboard_words import Now, ident, label, long_text, moment
from cards.stored_words import stored_policy_line
from cards.strings import Lang
from kernel.display import when
from kernel.timeutil import iso_utc
from store import PolicyVersion

Cell = str | dict[str, Any] | None
POLICY_PATH = "/ops/policy"


@dataclass(frozen=True)
class FiledUnder:
    """An operation's policy: the version it was filed under (None: filed before versions
    were kept, or under a digest no version holds), and the later versions that changed
    its audience's policy (each made its card stale)."""

    audience: str
    version: PolicyVersion | None
    changed_since: Sequence[PolicyVersion] = ()


def version_link(version: PolicyVersion, lang: Lang, cell_id: str | None = None) -> Cell:
    cell: dict[str, Any] = {
        "text": label("policy.version", lang, seq=str(version.seq)),
        "link": POLICY_PATH,
        "anchor": f"#v{version.seq}",
    }
    if cell_id:
        cell["id"] = cell_id
    return cell


def policy_facts(filed: FiledUnder, now: Now, lang: Lang) -> list[tuple[str, Cell]]:
    """The detail page's "Policy" facts: the version filed under, and each change since."""
    version = filed.version
    if version is None:
        return [(label("fact.policy", lang), label("policy.unversioned", lang))]
    facts: list[tuple[str, Cell]] = [
        (label("fact.policy", lang), version_link(version, lang, "policy-filed"))
    ]
    for later in filed.changed_since:
        lines = "; ".join(
            stored_policy_line(line, lang) for line in later.lines_for(filed.audience)
        )
        facts.append(
            (
                label("fact.policy_changed", lang, seq=str(later.seq)),
                {
                    "text": label(
                        "policy.changed_at", lang, at=when(later.at, now.tz), lines=lines
                    ),
                    "cls": "long",
                    "id": f"policy-changed-v{later.seq}",
                },
            )
        )
    return facts


def history_rows(versions: Sequence[PolicyVersion], now: Now, lang: Lang) -> list[dict[str, Any]]:
    """The history page's entries, newest first: when, by whom, what changed, its digests."""
    return [
        {
            "seq": version.seq,
            "anchor": f"v{version.seq}",
            "title": label("policy.version", lang, seq=str(version.seq)),
            "at": moment(iso_utc(version.at), now, lang),
            "actor": version.actor,
            "digest": ident(version.digest, short=True),
            # stored in English: its fixed words in `lang` (cards/stored_words.py)
            "lines": [long_text(stored_policy_line(line.text, lang)) for line in version.changes],
            "audiences": [
                (name, ident(digest, short=True))
                for name, digest in sorted(version.audiences.items())
            ],
        }
        for version in versions
    ]
