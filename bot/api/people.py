"""Names for the people an operation's view mentions, from config `[people]`.

Added to the API's responses, not to the store's projection: names are configuration, can
change at any time, and are never part of what was confirmed (docs/architecture.md §8).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


def mentioned(view: Mapping[str, Any]) -> Iterator[Any]:
    """Every open id the view names: operators, approvers, who confirmed, who decided, and
    the requester the proposer named."""
    yield from (view.get("audience") or {}).get("operators") or ()
    approval = view.get("approval") or {}
    yield from approval.get("approvers") or ()
    yield from approval.get("confirmed_by") or ()
    yield (view.get("decision") or {}).get("by")
    yield (view.get("source") or {}).get("requester_open_id")


def with_people(view: dict[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """The view with `people`: open id -> display name for each id it names that has one
    (an id without a configured name is left out; show it as it is)."""
    people = {
        each: names[each] for each in mentioned(view) if isinstance(each, str) and each in names
    }
    return {**view, "people": dict(sorted(people.items()))}
