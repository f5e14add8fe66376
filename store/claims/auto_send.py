"""Time-boxed auto-send: a draft nobody decided by its `auto_send_at` is confirmed by the clock.

Off unless a destination allows it and the draft asks for it (workers/domains/message). The
sweep reads what is due, then claims each one in a conditional write that re-checks it all
in SQL (`claim_sql.AUTO_DUE`): still awaiting confirmation with the digest it was filed with
(a re-file has superseded it otherwise), nobody has confirmed toward it, not expired, and its
time has come; and, as a click is re-checked against the config now, its audience's policy is
still the one it was filed under and its target still allows a time box as long as its own
(`AutoRules`, from the config the process runs with). A draft that fails the config checks
is left to people. So any operator's confirm or reject, or the proposer's re-file, that
commits first wins, and one that comes after finds it claimed: one decision either way. The
claim is an ordinary one, by operator `auto-ttl`, entry `auto`; the executor runs it as any
other.
A draft the config no longer lets send itself is disarmed (`disarm_disallowed`): its
`auto_send_at` cleared, so its card and the API stop promising it.
"""

from __future__ import annotations

from sqlalchemy import text
from ulid import ULID

from store.authority.records import Operation
from store.authority.store import Store
from store.claims.claim_sql import (
    FROM_STATE,
    AutoRules,
    auto_disarm,
    auto_due_select,
    claim_intent,
    claim_params,
    sqlite_time,
)
from store.claims.decisions import Claimed
from store.groupcommit import ConditionNotMet, Lane
from store.vocabulary import Entry

AUTO_OPERATOR = "auto-ttl"
SWEEP_LIMIT = 50


async def auto_send_due(store: Store, rules: AutoRules, limit: int = SWEEP_LIMIT) -> list[Claimed]:
    """Claim the time-boxed drafts whose time has come, that nobody decided and that `rules`
    (the config now) still let send themselves; the claims."""
    now = store.clock()
    # the claim's own conditions select them, so one left to people never crowds the sweep
    params = claim_params(
        operation_id="",
        digest="",
        operator=AUTO_OPERATOR,
        claim_id="",
        now=now,
        sqlite=store.sqlite,
    )
    async with store.read() as conn:
        due = (
            await conn.execute(
                text(auto_due_select(store.sqlite)), {**params, **rules.params(), "limit": limit}
            )
        ).all()
    claimed = []
    for operation_id, digest in due:
        if (claim := await claim_by_clock(store, operation_id, digest, rules)) is not None:
            claimed.append(claim)
    return claimed


async def claim_by_clock(
    store: Store, operation_id: str, digest: str, rules: AutoRules
) -> Claimed | None:
    """The clock's claim of one draft, or None if anything decided it first, it changed, or
    the config no longer lets it send itself."""
    now = store.clock()
    claim_id = str(ULID.from_datetime(now))
    intent = claim_intent(
        operation_id=operation_id,
        digest=digest,
        operator=AUTO_OPERATOR,
        claim_id=claim_id,
        now=now,
        sqlite=store.sqlite,
        lane=Lane.BACKGROUND,
        entry=Entry.AUTO.value,
        auto=rules,
    )
    try:
        (rows, *_) = await store.commit_intent(intent)
    except ConditionNotMet:
        return None
    return Claimed(Operation.from_stored(rows[0]), claim_id)


async def disarm_disallowed(store: Store, rules: AutoRules) -> list[str]:
    """Clear `auto_send_at` of every open draft `rules` never let send itself (its card is
    due, to drop the promise); their ids."""
    now = store.clock()
    params = {"from_state": FROM_STATE, "at": sqlite_time(now) if store.sqlite else now}
    params.update(rules.params())
    disarm = text(auto_disarm(store.sqlite))
    return await store.transact(lambda conn: [row[0] for row in conn.execute(disarm, params).all()])
