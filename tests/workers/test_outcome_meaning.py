"""The executor records every outcome with what its status says for the operation's kind
(`workers.domains.meaning`): the domain's words, tone and finality, the executor's own for its
statuses (refused before dispatch, unknown), and an undeclared status as itself, warn, final.
The store keeps them with the row; nobody reads them off a status list afterwards.

The runner here is a small real one (an in-memory venue that knows what it was sent), so the
test is about what the executor stamps, not about any venue.
"""

from __future__ import annotations

from datetime import datetime

from store import Claimed, Click, ExecutionLedger, Operation, Outcome, Store
from tests.support.factories import offered
from workers.domains import DOMAINS
from workers.domains.execution import Hold, Observed, Refusal, Runner
from workers.executor import ExecutionWorker

KIND = "finance.order"


class Steps(Runner):
    """Answers the submit with the first status, each later look with the next one."""

    kind = KIND
    executor_name = "sim-venue"
    executor_revision = "1"
    enabled = True

    def __init__(self, *statuses: str, refuse: bool = False) -> None:
        self.statuses = list(statuses)
        self.refuse = refuse
        self.sent: list[str] = []

    def _next(self) -> Observed:
        status = self.statuses.pop(0)
        working = bool(self.statuses)
        return Observed(status, working=working, concludes=not working)

    async def prepare(self, op: Operation) -> Refusal | Hold | None:
        return Refusal("test_refusal", "refused by the test") if self.refuse else None

    async def submit(self, op: Operation, client_id: str) -> Observed:
        self.sent.append(client_id)
        return self._next()

    async def lookup(
        self, op: Operation, client_id: str, dispatched_at: datetime | None
    ) -> Observed | None:
        return self._next() if client_id in self.sent and self.statuses else None


async def run_to_the_end(store: Store, runner: Steps) -> list[Outcome]:
    op = await offered(store)
    claimed = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(claimed, Claimed)
    worker = ExecutionWorker(store, {KIND: runner})
    ledger = ExecutionLedger(store)
    await worker.advance(claimed.operation)
    while runner.statuses:  # a working order: the venue says it changed, so look now
        await ledger.due_now([op.id])
        [due] = await ledger.lease_due(1)
        await worker.advance(due)
    return await ledger.outcomes(op.id)


async def test_each_outcome_is_stored_with_its_domains_meaning(store: Store) -> None:
    outcomes = await run_to_the_end(store, Steps("resting", "filled"))
    declared = DOMAINS[KIND].outcomes
    assert [(o.status, o.final, o.tone, o.words) for o in outcomes] == [
        (
            status,
            declared[status].final,
            declared[status].tone.value,
            declared[status].words.as_json(),
        )
        for status in ("resting", "filled")
    ]
    assert [o.final for o in outcomes] == [False, True]


async def test_the_executors_own_statuses_carry_the_executors_meaning(store: Store) -> None:
    [refused] = await run_to_the_end(store, Steps(refuse=True))
    assert (refused.status, refused.final, refused.tone) == ("preflight_rejected", True, "bad")
    assert refused.words == {
        "en": "Refused by pre-check — nothing sent",
        "zh": "预检未通过 — 未发送",
    }


async def test_a_status_the_domain_never_declared_reads_as_itself_and_is_final(
    store: Store,
) -> None:
    [odd] = await run_to_the_end(store, Steps("half_baked"))
    assert (odd.status, odd.final, odd.tone) == ("half_baked", True, "warn")
    assert odd.words == {"en": "half baked", "zh": "half baked"}
