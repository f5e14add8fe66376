"""The clock's claim of a time-boxed draft re-checks the config now, in its SQL (issue 30,
item 3): the audience's policy digest must be the one the draft was filed under, and its
target must still allow a time box as long as its own. Each rule alone, on both backends;
and a draft the rules leave to people never crowds the sweep's batch."""

from __future__ import annotations

from datetime import timedelta

from kernel.timeutil import utc_now
from store.authority.envelope import Approval
from store.authority.records import Operation
from store.authority.store import Store
from store.claims.auto_send import auto_send_due, claim_by_clock, disarm_disallowed
from store.claims.claim_sql import AutoRules
from store.lifecycle import State
from tests.support.factories import message_draft_fields, offered

TIME_BOX_S = 60
POLICY = "a" * 64
TARGET = "destination:acme"
RULES = AutoRules({"ops": POLICY}, {TARGET: 600})


async def timed(store: Store, policy: str = POLICY) -> Operation:
    return await offered(
        store,
        **message_draft_fields("Hello Acme"),
        approval=Approval(policy=policy),
        auto_send_after_s=TIME_BOX_S,
    )


def past_the_time_box(store: Store) -> None:
    later = utc_now() + timedelta(seconds=TIME_BOX_S + 1)
    store.clock = lambda: later


async def state_of(store: Store, operation_id: str) -> State:
    op = await store.get(operation_id)
    assert op is not None
    return op.state


async def test_a_policy_changed_since_filing_leaves_the_draft_to_people(store: Store) -> None:
    op = await timed(store)
    past_the_time_box(store)
    for policies in ({"ops": "b" * 64}, {}):  # another policy; the audience gone
        rules = AutoRules(policies, RULES.limits)
        assert await auto_send_due(store, rules) == []
        assert await claim_by_clock(store, op.id, op.confirm_digest, rules) is None
    assert await state_of(store, op.id) is State.AWAITING_CONFIRMATION
    assert await store.claim_count(op.id) == 0

    [claimed] = await auto_send_due(store, RULES)  # the policy it was filed under
    assert claimed.operation.id == op.id and claimed.operation.state is State.CLAIMED


async def test_a_draft_filed_with_no_policy_digest_never_sends_itself(store: Store) -> None:
    op = await timed(store, policy="")
    past_the_time_box(store)
    assert await auto_send_due(store, RULES) == []
    assert await claim_by_clock(store, op.id, op.confirm_digest, RULES) is None


async def test_a_time_box_the_destination_no_longer_allows_is_left_to_people(
    store: Store,
) -> None:
    op = await timed(store)
    past_the_time_box(store)
    for limits in ({}, {TARGET: TIME_BOX_S - 1}, {"destination:other": 600}):
        rules = AutoRules(RULES.policies, limits)
        assert await auto_send_due(store, rules) == [], limits
        assert await claim_by_clock(store, op.id, op.confirm_digest, rules) is None
    assert await store.claim_count(op.id) == 0

    exactly = AutoRules(RULES.policies, {TARGET: TIME_BOX_S})  # the longest allowed: its own
    [claimed] = await auto_send_due(store, exactly)
    assert claimed.operation.id == op.id
    assert await store.claim_count(op.id) == 1


async def test_drafts_left_to_people_do_not_crowd_out_one_that_may_send(store: Store) -> None:
    stale = [await timed(store, policy="c" * 64) for _ in range(3)]
    current = await timed(store)
    past_the_time_box(store)
    claimed = await auto_send_due(store, RULES, limit=2)
    assert [claim.operation.id for claim in claimed] == [current.id]
    for op in stale:
        assert await state_of(store, op.id) is State.AWAITING_CONFIRMATION


async def test_a_disarm_clears_only_the_time_boxes_the_rules_disallow(store: Store) -> None:
    allowed = await timed(store)
    stale = await timed(store, policy="c" * 64)
    too_long = await offered(
        store,
        **message_draft_fields("Hello Acme"),
        approval=Approval(policy=POLICY),
        auto_send_after_s=601,
    )
    assert sorted(await disarm_disallowed(store, RULES)) == sorted([stale.id, too_long.id])
    for op in (stale, too_long):
        after = await store.get(op.id)
        assert after is not None and after.auto_send_at is None
        assert after.state is State.AWAITING_CONFIRMATION
        assert after.version == op.version + 1 and after.card_due_at is not None  # re-rendered
    kept = await store.get(allowed.id)
    assert kept is not None and kept.auto_send_at == allowed.auto_send_at
    assert kept.version == allowed.version
    assert await disarm_disallowed(store, RULES) == []  # once
