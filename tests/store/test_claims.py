"""Principle 3 (docs/architecture.md §1): one claim per operation, decided by the database."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import Counter
from datetime import timedelta

import pytest

from kernel.reasons import Reason
from kernel.timeutil import utc_now
from store.authority.store import Store
from store.claims.decisions import Claimed, Click, Decided, Refused
from store.lifecycle import IllegalTransition, State
from tests.support.backends import Backend
from tests.support.factories import draft, offered
from tests.support.processes import ROOT


def confirm(op_id: str, digest: str, operator: str = "ou_alice", event: str = "e") -> Click:
    return Click(op_id, "confirm", digest, operator, "oc_ops", f"om_{op_id}", event)


async def test_fifty_concurrent_claims_on_separate_connections_one_wins(store: Store) -> None:
    op = await offered(store)
    results = await asyncio.gather(
        *[
            store.confirm_and_claim(confirm(op.id, op.confirm_digest, event=f"e{i}"))
            for i in range(50)
        ]
    )
    winners = [r for r in results if isinstance(r, Claimed)]
    losers = [r for r in results if isinstance(r, Refused)]
    assert len(winners) == 1 and len(losers) == 49
    assert {r.reason for r in losers} == {Reason.ALREADY_CLAIMED}
    assert await store.claim_count(op.id) == 1
    after = await store.get(op.id)
    assert after is not None and after.state is State.CLAIMED and after.execution_state == "queued"
    assert after.version == op.version + 1
    confirmations = await store.confirmations(op.id)
    assert sum(c.accepted for c in confirmations) == 1 and len(confirmations) == 50


async def test_two_os_processes_race_for_one_claim(store: Store, backend: Backend) -> None:
    op = await offered(store)
    env = {**os.environ, **backend.env(), "PYTHONPATH": str(ROOT)}
    workers = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.support.claim_worker",
            op.id,
            op.confirm_digest,
            "25",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            cwd=ROOT,
        )
        for _ in range(2)
    ]
    try:
        for worker in workers:  # both connected and waiting before either fires
            assert worker.stdout is not None
            line = await asyncio.wait_for(worker.stdout.readline(), 30)
            assert line.strip() == b"ready"
        outputs = await asyncio.wait_for(
            asyncio.gather(*[worker.communicate(b"go\n") for worker in workers]), 60
        )
    finally:
        for worker in workers:
            if worker.returncode is None:
                worker.kill()
    assert [worker.returncode for worker in workers] == [0, 0]
    tally = Counter(
        result for out, _ in outputs for result in json.loads(out.decode().strip().splitlines()[-1])
    )
    assert tally == {"claimed": 1, "already_claimed": 49}
    assert await store.claim_count(op.id) == 1


async def _snapshot(store: Store, op_id: str) -> tuple[object, int]:
    return await store.get(op_id), await store.claim_count(op_id)


@pytest.mark.parametrize(
    ("close", "reason"),
    [
        ("cancel", Reason.CANCELLED),
        ("reject", Reason.ALREADY_REJECTED),
        ("supersede", Reason.SUPERSEDED),
        ("expire", Reason.EXPIRED),
    ],
)
async def test_closed_operations_refuse_claims_and_stay_as_they_are(
    store: Store, close: str, reason: Reason
) -> None:
    if close == "expire":
        op = await offered(store, expires_in_s=30)
        store.clock = lambda: utc_now() + timedelta(seconds=31)
        assert await store.expire_due() == [op.id]
    else:
        op = await offered(store)
        if close == "cancel":
            await store.cancel(op.id, "proposer:dev-agent")
        elif close == "supersede":
            await store.supersede(op.id, "system:message")
        else:
            rejected = await store.reject(
                Click(op.id, "reject", op.confirm_digest, "ou_bob", "oc_ops", op.card_message_id)
            )
            assert isinstance(rejected, Decided)
    before = await _snapshot(store, op.id)

    result = await store.confirm_and_claim(confirm(op.id, op.confirm_digest))

    assert isinstance(result, Refused) and result.reason is reason
    assert await _snapshot(store, op.id) == before
    assert before[1] == 0


async def test_a_claim_after_expiry_is_refused_even_before_the_sweep(store: Store) -> None:
    op = await offered(store, expires_in_s=30)
    store.clock = lambda: op.envelope.expires_at  # the expiry instant itself is too late
    result = await store.confirm_and_claim(confirm(op.id, op.confirm_digest))
    assert isinstance(result, Refused) and result.reason is Reason.EXPIRED
    after = await store.get(op.id)
    assert after == op and await store.claim_count(op.id) == 0


async def test_a_claim_just_before_expiry_wins(store: Store) -> None:
    op = await offered(store, expires_in_s=30)
    store.clock = lambda: op.envelope.expires_at - timedelta(milliseconds=1)
    assert isinstance(await store.confirm_and_claim(confirm(op.id, op.confirm_digest)), Claimed)


async def test_wrong_digest_unknown_operation_and_unsent_card_are_refused(store: Store) -> None:
    op = await offered(store)
    wrong = await store.confirm_and_claim(confirm(op.id, "0" * 64))
    assert isinstance(wrong, Refused) and wrong.reason is Reason.DIGEST_MISMATCH
    unknown = await store.confirm_and_claim(confirm("01NOPE", op.confirm_digest))
    assert isinstance(unknown, Refused) and unknown.reason is Reason.OPERATION_UNKNOWN
    assert unknown.operation is None
    prepared = (await store.propose(draft())).operation
    early = await store.confirm_and_claim(confirm(prepared.id, prepared.confirm_digest))
    assert isinstance(early, Refused) and early.reason is Reason.NOT_OFFERED
    assert await store.get(op.id) == op and await store.get(prepared.id) == prepared


async def test_refusals_are_recorded_with_their_reason_in_confirmations_and_audit(
    store: Store,
) -> None:
    op = await offered(store)
    await store.record_refusal(
        confirm(op.id, op.confirm_digest, "ou_mallory"), Reason.OPERATOR_NOT_ALLOWED
    )
    [confirmation] = await store.confirmations(op.id)
    assert (confirmation.accepted, confirmation.reason_code, confirmation.operator_open_id) == (
        False,
        "operator_not_allowed",
        "ou_mallory",
    )
    audit = await store.audit(op.id)
    assert (audit[-1].actor, audit[-1].event, audit[-1].reason_code) == (
        "operator:ou_mallory",
        "click_refused",
        "operator_not_allowed",
    )
    assert audit[-1].from_state == audit[-1].to_state == State.AWAITING_CONFIRMATION
    assert await store.get(op.id) == op
    # a click naming no operation we know is on record too, with no state either side
    await store.record_refusal(confirm("no-such-op", "x", "ou_mallory"), Reason.OPERATION_UNKNOWN)
    [unknown] = await store.audit("no-such-op")
    assert (unknown.reason_code, unknown.from_state, unknown.to_state) == (
        "operation_unknown",
        None,
        None,
    )


async def test_a_claimed_operation_cannot_be_cancelled_rejected_or_expired(store: Store) -> None:
    op = await offered(store, expires_in_s=30)
    assert isinstance(await store.confirm_and_claim(confirm(op.id, op.confirm_digest)), Claimed)
    with pytest.raises(IllegalTransition):
        await store.cancel(op.id, "proposer:dev-agent")
    rejected = await store.reject(Click(op.id, "reject", op.confirm_digest, "ou_bob"))
    assert isinstance(rejected, Refused) and rejected.reason is Reason.ALREADY_CLAIMED
    store.clock = lambda: utc_now() + timedelta(hours=1)
    assert await store.expire_due() == []
    after = await store.get(op.id)
    assert after is not None and after.state is State.CLAIMED
    assert await store.claim_count(op.id) == 1


async def test_every_transition_is_audited_with_actor_and_states(store: Store) -> None:
    op = await offered(store)
    await store.confirm_and_claim(confirm(op.id, op.confirm_digest, "ou_bob"))
    audit = await store.audit(op.id)
    assert [(a.actor, a.event, a.from_state, a.to_state) for a in audit] == [
        ("proposer:dev-agent", "proposed", None, "prepared"),
        ("system:cards", "card_sent", "prepared", "awaiting_confirmation"),
        ("operator:ou_bob", "confirmed", "awaiting_confirmation", "claimed"),
    ]


async def test_a_cancel_beside_the_card_being_posted_cancels(store: Store) -> None:
    # The card worker's "card sent" (prepared -> awaiting) may land between the cancel's read
    # of the state and its write (PostgreSQL runs them side by side): the cancel is still
    # allowed from the state it finds, so it must not be refused as "not cancellable"; and a
    # cancel landing inside "card sent" leaves the card recorded, not an error.
    prepared = [(await store.propose(draft())).operation for _ in range(60)]

    async def post_card(index: int) -> None:
        await store.mark_card_sent(prepared[index].id, f"om_race_{index}")

    async def cancel(index: int) -> None:
        await store.cancel(prepared[index].id, "proposer:dev-agent")

    in_flight = asyncio.Semaphore(8)  # pairs at once: well inside the server's connections

    async def race(index: int) -> None:
        async with in_flight:
            steps = (post_card, cancel) if index % 2 else (cancel, post_card)
            await asyncio.gather(*(step(index) for step in steps))

    await asyncio.gather(*(race(index) for index in range(len(prepared))))
    for index, op in enumerate(prepared):
        after = await store.get(op.id)
        assert after is not None and after.state is State.CANCELLED, (op.id, after)
        # and the card that went out is known, so it is patched to say so
        assert after.card_message_id == f"om_race_{index}"
