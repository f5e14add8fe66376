"""A proposal as values: the validated `Draft` the API hands the store, what filing it
returned (`Proposed`), and the conflict a reused request id with other content raises
(`RequestConflict`, naming the fields by `content_differences`). `store/authority/filing.py` files it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from store.authority.envelope import Approval, Audience, Source, implied_world
from store.vocabulary import World

if TYPE_CHECKING:  # an annotation only: a Draft is built without SQLAlchemy (countersign mcp)
    from store.authority.records import Operation

# worlds where nothing of an operation leaves this machine (`simulated` on every surface)
LOCAL_WORLDS = frozenset({World.SIMULATED, World.EMULATOR})


class RequestConflict(Exception):
    """Same (proposer, request_id) with different content."""

    def __init__(self, operation_id: str, fields: Sequence[str]) -> None:
        super().__init__(
            f"request_id already used for {operation_id} with different {', '.join(fields)}"
        )
        self.operation_id = operation_id
        self.fields = tuple(fields)


class ActiveClaim(Exception):
    """A draft that replaces open ones (a message draft) while an earlier one to the same
    target is claimed and its send has not resolved: it waits until it has."""

    def __init__(self, operation_id: str, target_ref: str) -> None:
        super().__init__(f"operation {operation_id} to {target_ref} is being sent")
        self.operation_id = operation_id
        self.target_ref = target_ref


@dataclass(frozen=True)
class Draft:
    """A validated proposal, ready to become an operation."""

    kind: str
    schema_version: int
    executor_name: str
    executor_revision: str
    simulated: bool
    payload: Mapping[str, Any]
    projection: Mapping[str, Any]
    audience: Audience
    target_ref: str
    expires_in_s: int
    source: Source
    # What the proposer sent (minus request_id): a replay must match it exactly.
    request_content: Mapping[str, Any]
    # Re-filing replaces the open draft for the same kind and target (message drafts).
    supersede_open: bool = False
    # what the approval policy asks of it (bot/config/policy.py), bound into the confirm digest
    approval: Approval = field(default_factory=Approval)
    # a reminder this long before expiry, if it is still undecided then (not a term: it
    # changes nothing an operator confirms)
    remind_before_s: int | None = None
    # its filing is announced in an internal chat (a message draft's filing receipt): a row
    # in the outbox, written with the operation (`store.deliveries.conclusions.enqueue_filing_receipt`)
    announce_filing: bool = False
    # a time-boxed draft sends itself this long after filing if nobody decided (None: never)
    auto_send_after_s: int | None = None
    # which world it acts in (`Domain.world`); None: the one `simulated` implies (a draft
    # built without one: simulated -> SIMULATED, else not a venue)
    world: World | None = None

    def __post_init__(self) -> None:
        if self.world is not None and self.simulated != (self.world in LOCAL_WORLDS):
            raise ValueError(
                f"a draft in world {self.world.value} has simulated={self.simulated}; "
                f"simulated means world in {sorted(w.value for w in LOCAL_WORLDS)}"
            )

    @property
    def acts_in(self) -> World | None:
        """The world it is filed with."""
        return self.world if self.world is not None else implied_world(self.simulated)


@dataclass(frozen=True)
class Proposed:
    operation: Operation
    created: bool
    # the open drafts to the same target this one superseded when it was filed (ids)
    superseded: tuple[str, ...] = ()


def content_differences(old: Any, new: Any, path: str = "") -> list[str]:
    """Dotted paths where two JSON values differ (leaves only)."""
    if isinstance(old, dict) and isinstance(new, dict):
        fields: list[str] = []
        for key in sorted(set(old) | set(new)):
            sub = f"{path}.{key}" if path else key
            if key not in old or key not in new:
                fields.append(sub)
            else:
                fields.extend(content_differences(old[key], new[key], sub))
        return fields
    return [] if old == new else [path or "$"]
