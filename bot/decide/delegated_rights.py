"""Rights a person holds by delegation, as the provenance checks read them to name a refusal
(the database decides: store/claims/delegation_sql.py). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from store import Delegation, Operation


def rights_held(
    person: str, op: Operation, delegations: Sequence[Delegation], now: datetime
) -> frozenset[str]:
    """Whose rights in the operation's audience `person` holds now, by delegation (never its
    requester's: the database refuses those too)."""
    requester = op.envelope.source.requester_open_id
    return frozenset(
        d.delegator
        for d in delegations
        if d.delegate == person
        and d.audience == op.envelope.audience.name
        and d.in_force(now)
        and d.delegator != requester
    )


def lapsed(person: str, op: Operation, delegations: Sequence[Delegation], now: datetime) -> bool:
    """`person` held a delegation in the operation's audience, and none is in force now."""
    audience = op.envelope.audience.name
    held = any(d.delegate == person and d.audience == audience for d in delegations)
    return held and not rights_held(person, op, delegations, now)
