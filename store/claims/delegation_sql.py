"""Delegated rights in the click's SQL: whether a person may confirm (or reject) with a right
handed to them, which right (seat) a confirmation then uses, and what the card says of it.

A person confirms with their own right when the operation's approvers name them; otherwise
with a delegation to them in the operation's audience that is in force at the click's
moment (not revoked, started, not ended), from an approver of this operation, neither of
them its requester, and whose right no confirmation of it has used yet (the first such
delegator by open id). Checked in the write, so a revocation or an end applies at once,
also to cards already out; the quorum counts seats (`uq_confirmations_seat`) and people
(`uq_confirmations_counted`), so a person counts once whatever they act as.

Each snippet is for the operations row named `{o}` in its statement (`operations` in an
UPDATE or INSERT...SELECT on it, `claimed` in PostgreSQL's claim CTE); the parameters are
the claim's (`:operator`, `:at`, `:operation_id`).
"""

from __future__ import annotations

SQLITE_APPROVERS = "json_each(coalesce({o}.approvers, {o}.audience_operators))"
SQLITE_IS_APPROVER = (
    "EXISTS (SELECT 1 FROM " + SQLITE_APPROVERS + " AS listed WHERE listed.value = :operator)"
)
PG_IS_APPROVER = (
    "(CAST(coalesce({o}.approvers, {o}.audience_operators) AS jsonb)"
    " @> jsonb_build_array(CAST(:operator AS text)))"
)

IN_FORCE = {
    True: """d.audience = {o}.audience_name AND d.delegate = :operator
         AND d.revoked_at IS NULL AND d.starts_at <= :at AND d.ends_at > :at""",
    False: """d.audience = {o}.audience_name AND d.delegate = CAST(:operator AS text)
         AND d.revoked_at IS NULL AND d.starts_at <= CAST(:at AS timestamptz)
         AND d.ends_at > CAST(:at AS timestamptz)""",
}
DELEGATOR_APPROVES = {
    True: "EXISTS (SELECT 1 FROM " + SQLITE_APPROVERS + " AS seat WHERE seat.value = d.delegator)",
    False: "CAST(coalesce({o}.approvers, {o}.audience_operators) AS jsonb)"
    " @> jsonb_build_array(d.delegator)",
}
NOT_REQUESTER = {
    True: "coalesce({o}.source_requester_open_id, '') NOT IN (d.delegator, :operator)",
    False: "coalesce({o}.source_requester_open_id, '')"
    " NOT IN (d.delegator, CAST(:operator AS text))",
}
SEAT_FREE = """NOT EXISTS (SELECT 1 FROM confirmations AS used
                   WHERE used.operation_id = {o}.id AND used.action = 'confirm' AND used.accepted
                     AND coalesce(used.on_behalf_of, used.operator_open_id) = d.delegator)"""


def is_approver(sqlite: bool, row: str = "operations") -> str:
    return (SQLITE_IS_APPROVER if sqlite else PG_IS_APPROVER).format(o=row)


def delegation(sqlite: bool, what: str, row: str = "operations") -> str:
    """A scalar subquery: `what` (of delegation `d`) of the delegation this confirmation
    would use, NULL if none."""
    conditions = " AND ".join(
        (IN_FORCE[sqlite], DELEGATOR_APPROVES[sqlite], NOT_REQUESTER[sqlite], SEAT_FREE)
    )
    sql = f"(SELECT {what} FROM delegations AS d WHERE {conditions} ORDER BY d.delegator LIMIT 1)"
    return sql.format(o=row)


def may_confirm(sqlite: bool) -> str:
    """The gate: an approver, or a delegate with a right in force."""
    return f"({is_approver(sqlite)} OR {delegation(sqlite, 'd.id')} IS NOT NULL)"


def seat_of(sqlite: bool, what: str, row: str = "operations") -> str:
    """`what` of the delegation a confirmation uses: NULL for an approver's own."""
    return (
        f"CASE WHEN {is_approver(sqlite, row)} THEN NULL ELSE {delegation(sqlite, what, row)} END"
    )


def delegated_one(sqlite: bool, row: str = "operations") -> str:
    """The card's note for a single confirmation: {person: {for, until}}, or NULL."""
    build = (
        "json_object(:operator, json_object('for', d.delegator, 'until', d.ends_text))"
        if sqlite
        else "CAST(jsonb_build_object(CAST(:operator AS text), "
        "jsonb_build_object('for', d.delegator, 'until', d.ends_text)) AS text)"
    )
    return seat_of(sqlite, build, row)


SQLITE_DELEGATED_ALL = """(SELECT CASE WHEN count(*) = 0 THEN NULL
            ELSE json_group_object(c.operator_open_id,
                                   json_object('for', c.on_behalf_of, 'until', d.ends_text)) END
       FROM confirmations AS c JOIN delegations AS d ON d.id = c.delegation_id
      WHERE c.operation_id = {op} AND c.action = 'confirm' AND c.accepted)"""
PG_DELEGATED_ALL = """(SELECT CAST(jsonb_object_agg(c.operator_open_id,
                jsonb_build_object('for', c.on_behalf_of, 'until', d.ends_text)) AS text)
       FROM confirmations AS c JOIN delegations AS d ON d.id = c.delegation_id
      WHERE c.operation_id = {op} AND c.action = 'confirm' AND c.accepted)"""


def delegated_all(sqlite: bool, op: str) -> str:
    """The card's note for every counted confirmation given with a delegated right."""
    return (SQLITE_DELEGATED_ALL if sqlite else PG_DELEGATED_ALL).format(op=op)


ACTOR_FOR = """'operator:' || {operator} || coalesce(' for ' || (
    SELECT on_behalf_of FROM confirmations
     WHERE operation_id = {op} AND operator_open_id = {operator}
       AND action = 'confirm' AND accepted), '')"""


def confirming_actor(op: str, operator: str) -> str:
    """The audit entry's actor: `operator:ou_bob`, or `operator:ou_bob for ou_alice`."""
    return ACTOR_FOR.format(op=op, operator=operator)


# A reject: any operator of the audience, or a delegate of one (the right to decide is
# handed whole: a reject needs no seat, and counts no quorum).
REJECT_DELEGATE = {
    True: """EXISTS (SELECT 1 FROM delegations AS d WHERE {in_force}
                  AND EXISTS (SELECT 1 FROM json_each(operations.audience_operators) AS op
                               WHERE op.value = d.delegator))""",
    False: """EXISTS (SELECT 1 FROM delegations AS d WHERE {in_force}
                  AND CAST(operations.audience_operators AS jsonb)
                      @> jsonb_build_array(d.delegator))""",
}


def may_reject_as_delegate(sqlite: bool) -> str:
    in_force = IN_FORCE[sqlite].format(o="operations")
    return REJECT_DELEGATE[sqlite].format(in_force=in_force)


# Whose right a reject by a delegate used: the delegation in force to `:operator` from one of
# the audience's operators, when `:operator` is not one of them (NULL otherwise). For the
# reject's confirmation row and its audit entry's actor.
REJECT_ON_BEHALF_OF = {
    True: """(SELECT min(d.delegator) FROM delegations AS d
        JOIN operations AS o ON o.id = :operation_id
       WHERE d.audience = o.audience_name AND d.delegate = :operator
         AND d.revoked_at IS NULL AND d.starts_at <= :at AND d.ends_at > :at
         AND NOT EXISTS (SELECT 1 FROM json_each(o.audience_operators) AS m
                          WHERE m.value = :operator)
         AND EXISTS (SELECT 1 FROM json_each(o.audience_operators) AS m
                      WHERE m.value = d.delegator))""",
    # cast as the statement's other uses of these parameters are (store/claims/reject_sql.py)
    False: """(SELECT min(d.delegator) FROM delegations AS d
        JOIN operations AS o ON o.id = CAST(:operation_id AS text)
       WHERE d.audience = o.audience_name AND d.delegate = CAST(:operator AS text)
         AND d.revoked_at IS NULL AND d.starts_at <= CAST(:at AS timestamptz)
         AND d.ends_at > CAST(:at AS timestamptz)
         AND NOT CAST(o.audience_operators AS jsonb) @> jsonb_build_array(d.delegate)
         AND CAST(o.audience_operators AS jsonb) @> jsonb_build_array(d.delegator))""",
}
