"""Names for the people an operation's view mentions, from config `[people]`.

Added to the API's responses, not by the store's projection: names are configuration, can
change at any time, and are never part of what was confirmed (docs/architecture.md §8).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from bot.api.unposted import unposted
from bot.config import Settings
from store import OperationView


def mentioned(view: OperationView) -> Iterator[str | None]:
    """Every open id the view names: operators, approvers, who confirmed, who decided, and
    the requester the proposer named."""
    yield from view.audience.operators
    yield from view.approval.approvers
    yield from view.approval.confirmed_by
    yield view.decision.by if view.decision else None
    yield view.source.requester_open_id


def with_people(view: OperationView, names: Mapping[str, str]) -> OperationView:
    """The view with `people`: open id -> display name for each id it names that has one
    (an id without a configured name is left out; show it as it is)."""
    people = {each: names[each] for each in mentioned(view) if each and each in names}
    return view.model_copy(update={"people": dict(sorted(people.items()))})


def answered(view: OperationView, settings: Settings) -> dict[str, Any]:
    """The view as the API answers it: JSON, with `people` (enums as their strings) and, when
    Lark is off here, why its card was not posted."""
    shown = unposted(with_people(view, settings.people), settings.lark.mode)
    return shown.model_dump(mode="json")
