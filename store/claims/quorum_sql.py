"""A confirmation as hand-written SQL, whatever the operation's policy asks (1 or N of M).

One intent holds two branches. The claim (store/claims/claim_sql.py) runs first and takes an
operation that needs one confirmation, as it always did. If it matched nothing, the quorum
branch runs, for an operation that needs more:

1. `LOCK`: the operation's row, conditional on state, digest, expiry, needing more than one
   confirmation and (for a card click) where the click came from. On PostgreSQL this holds
   the row's lock until COMMIT, so confirmations of one operation count one after another
   (each later statement reads what the one before committed); SQLite has one writer.
2. `COUNT`: this operator's confirmation, at most once per (operation, operator): the
   unique index `uq_confirmations_counted` decides. No row: they had already confirmed.
3. `CLAIM`: the claim, if the confirmations now reach the number required, with its claim
   and audit rows. Two replicas recording the last two confirmations at the same moment
   queue on the row lock; the second finds the operation claimed and claims nothing.
4. `PROGRESS`: otherwise a new version (the card shows who confirmed) and its audit row.

`confirm_statements` lays them out; `ConfirmResult.read` says what happened.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from store.claims.claim_sql import (
    CONFIRMED,
    FROM_STATE,
    TO_STATE,
    claim_statements,
    confirm_from_card,
)
from store.claims.delegation_sql import ACTOR_FOR, delegated_all, seat_of
from store.groupcommit import Row, Statement
from store.lifecycle import Event, State, next_state

# a counted confirmation leaves the operation awaiting more (the lifecycle's table says so)
COUNTED_EVENT = Event.CONFIRMATION_COUNTED.value
COUNTED_TO = next_state(State(FROM_STATE), Event.CONFIRMATION_COUNTED).value

# the accepted confirm rows of this operation: what a quorum counts
COUNTED = """
SELECT {what} FROM confirmations
 WHERE operation_id = {op} AND action = 'confirm' AND accepted"""

SQLITE_CONFIRMED_BY = (
    "(SELECT json_group_array(operator_open_id) FROM ("
    + COUNTED.format(what="operator_open_id", op=":operation_id")
    + " ORDER BY id))"
)
PG_CONFIRMED_BY = (
    "(SELECT CAST(coalesce(json_agg(operator_open_id ORDER BY id), '[]') AS text) FROM ("
    + COUNTED.format(what="operator_open_id, id", op="CAST(:operation_id AS text)")
    + ") AS counted)"
)

LOCK_FOR = """
UPDATE operations SET version = version
 WHERE id = {op} AND state = {from_state} AND confirm_digest = {digest}
   AND expires_at > {at} AND required_confirmations > 1{from_card}
RETURNING id
"""
# with the seat it uses (store/claims/delegation_sql.py); a person or a seat counted before:
# nothing (either unique index decides)
COUNT_FOR = """
INSERT INTO confirmations (operation_id, at, action, operator_open_id, digest, chat_id,
                           message_id, event_id, accepted, entry, on_behalf_of, delegation_id)
SELECT {op}, {at}, 'confirm', {operator}, {digest}, {chat_id}, {message_id}, {event_id},
       {accepted}, {entry}, {seat_delegator}, {seat_id}
  FROM operations WHERE id = {op}
ON CONFLICT DO NOTHING
RETURNING id
"""
CLAIM_FOR = """
UPDATE operations
   SET state = {to_state}, version = version + 1, updated_at = {at}, execution_state = 'queued',
       exec_due_at = {at}, decided_by = {operator}, decided_at = {at}, card_due_at = {due},
       confirmed_by = {confirmed_by}, decision_entry = {entry}, delegated = {delegated}
 WHERE id = {op} AND state = {from_state}
   AND required_confirmations <= ({count})
RETURNING *
"""
CLAIM_ROW_FOR = """
INSERT INTO claims (id, operation_id, confirmation_id, operator_open_id, claimed_at)
VALUES ({claim_id}, {op},
        (SELECT max(id) FROM confirmations
          WHERE operation_id = {op} AND operator_open_id = {operator}
            AND action = 'confirm' AND accepted),
        {operator}, {at})
"""
PROGRESS_FOR = """
UPDATE operations
   SET version = version + 1, updated_at = {at}, card_due_at = {due},
       confirmed_by = {confirmed_by}, delegated = {delegated}
 WHERE id = {op} AND state = {from_state}
RETURNING *
"""
AUDIT_FOR = (
    """
INSERT INTO audit (operation_id, at, actor, event, from_state, to_state, evidence)
VALUES ({op}, {at}, """
    + ACTOR_FOR
    + """, {event}, {from_state}, {to_state}, {evidence})
"""
)
# the claim's audit row, and a counted confirmation's (the state stays where it was)
CLAIMED_AUDIT_FOR = AUDIT_FOR.replace("{event}", "{event_claimed}")
COUNTED_AUDIT_FOR = AUDIT_FOR.replace("{event}", "{event_counted}").replace(
    "{to_state}", "{counted_to}"
)

SQLITE_TYPES = {
    "claim_id": ":claim_id",
    "chat_id": ":chat_id",
    "message_id": ":message_id",
    "event_id": ":event_id",
    "accepted": ":accepted",
    "event_claimed": ":event",
    "event_counted": ":counted_event",
    "counted_to": ":counted_to",
    "op": ":operation_id",
    "from_state": ":from_state",
    "to_state": ":to_state",
    "digest": ":digest",
    "at": ":at",
    "due": ":due",
    "operator": ":operator",
    "entry": ":entry",
    "evidence": ":evidence",
}
PG_TYPES = {
    "claim_id": "CAST(:claim_id AS text)",
    "chat_id": "CAST(:chat_id AS text)",
    "message_id": "CAST(:message_id AS text)",
    "event_id": "CAST(:event_id AS text)",
    "accepted": "CAST(:accepted AS boolean)",
    "event_claimed": "CAST(:event AS text)",
    "event_counted": "CAST(:counted_event AS text)",
    "counted_to": "CAST(:counted_to AS text)",
    "op": "CAST(:operation_id AS text)",
    "from_state": "CAST(:from_state AS text)",
    "to_state": "CAST(:to_state AS text)",
    "digest": "CAST(:digest AS text)",
    "at": "CAST(:at AS timestamptz)",
    "due": "CAST(:due AS timestamptz)",
    "operator": "CAST(:operator AS text)",
    "entry": "CAST(:entry AS text)",
    "evidence": "CAST(:evidence AS text)",
}


def _sql(template: str, sqlite: bool, card_click: bool = False) -> str:
    types = SQLITE_TYPES if sqlite else PG_TYPES
    return template.format(
        **types,
        from_card=confirm_from_card(sqlite) if card_click else "",
        confirmed_by=SQLITE_CONFIRMED_BY if sqlite else PG_CONFIRMED_BY,
        count=COUNTED.format(what="count(*)", op=types["op"]),
        seat_delegator=seat_of(sqlite, "d.delegator"),
        seat_id=seat_of(sqlite, "d.id"),
        delegated=delegated_all(sqlite, types["op"]),
    )


class QuorumSql(NamedTuple):
    """The quorum branch's statements for one backend, in the order they run."""

    lock: str
    confirmation: str  # COUNT: this operator's confirmation, once
    claim: str
    claim_row: str
    claimed_audit: str
    progress: str
    counted_audit: str


QUORUM_SQL = {
    (sqlite, card_click): QuorumSql(
        lock=_sql(LOCK_FOR, sqlite, card_click),
        confirmation=_sql(COUNT_FOR, sqlite),
        claim=_sql(CLAIM_FOR, sqlite),
        claim_row=_sql(CLAIM_ROW_FOR, sqlite),
        claimed_audit=_sql(CLAIMED_AUDIT_FOR, sqlite),
        progress=_sql(PROGRESS_FOR, sqlite),
        counted_audit=_sql(COUNTED_AUDIT_FOR, sqlite),
    )
    for sqlite in (True, False)
    for card_click in (True, False)
}


class Confirmed(StrEnum):
    """What a confirmation came to."""

    CLAIMED = "claimed"  # it was the last one needed: the operation is claimed
    COUNTED = "counted"  # it counts; the operation waits for more
    ALREADY = "already"  # this operator had already confirmed: nothing changed
    REFUSED = "refused"  # the database refused it (the caller reads why)


@dataclass(frozen=True)
class ConfirmLayout:
    """Where each branch's rows are in the intent's results."""

    claim: int  # the one-confirmation claim's first statement
    lock: int
    count: int
    quorum_claim: int
    progress: int

    def read(
        self, results: tuple[list[Row], ...] | list[list[Row]]
    ) -> tuple[Confirmed, Row | None]:
        """What happened, and the operation's row as it was left (claimed or counted)."""
        if results[self.claim]:
            return Confirmed.CLAIMED, results[self.claim][0]
        if not results[self.lock]:
            return Confirmed.REFUSED, None
        if not results[self.count]:
            return Confirmed.ALREADY, None
        if results[self.quorum_claim]:
            return Confirmed.CLAIMED, results[self.quorum_claim][0]
        return Confirmed.COUNTED, results[self.progress][0]


def confirm_statements(
    params: dict[str, Any],
    *,
    sqlite: bool,
    at: int,
    after: int | None = None,
    card_click: bool = False,
) -> tuple[tuple[Statement, ...], ConfirmLayout]:
    """Both branches, for an intent in which the first of them has index `at`; `after` and
    `card_click` as for `claim_sql.claim_statements`. `params` from `claim_sql.claim_params`
    (with `policies` for a card click)."""
    claim = claim_statements(params, sqlite=sqlite, at=at, after=after, card_click=card_click)
    sql = QUORUM_SQL[(sqlite, card_click)]
    lock = at + len(claim)
    layout = ConfirmLayout(
        claim=at, lock=lock, count=lock + 1, quorum_claim=lock + 2, progress=lock + 5
    )
    counted = {
        **params,
        "accepted": 1 if sqlite else True,
        "counted_event": COUNTED_EVENT,
        "counted_to": COUNTED_TO,
    }
    quorum = (
        Statement(
            sql.lock,
            counted,
            only_if=(at, False),
            and_if=(after, True) if after is not None else None,
        ),
        Statement(sql.confirmation, counted, only_if=(layout.lock, True)),
        Statement(sql.claim, counted, only_if=(layout.count, True)),
        Statement(sql.claim_row, counted, only_if=(layout.quorum_claim, True)),
        Statement(sql.claimed_audit, counted, only_if=(layout.quorum_claim, True)),
        Statement(
            sql.progress,
            counted,
            only_if=(layout.count, True),
            and_if=(layout.quorum_claim, False),
        ),
        Statement(sql.counted_audit, counted, only_if=(layout.progress, True)),
    )
    return (*claim, *quorum), layout


__all__ = ["CONFIRMED", "TO_STATE", "ConfirmLayout", "Confirmed", "confirm_statements"]
