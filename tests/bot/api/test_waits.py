"""`GET /api/v1/operations/{id}?wait_s=N&until=...`: a long poll for a condition, not a change.

`until=decided|final` answers at once when the operation already is so (an ask that comes
just after the moment does not wait for the next change), as soon as it becomes so, or with
the operation as it stands after N seconds. A deadline in these tests only bounds a failure:
a wait that ends is one that saw its condition, far inside its 60 s window.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bot.api.app import waited
from store import (
    Claimed,
    Click,
    Execution,
    ExecutionLedger,
    Observation,
    OperationView,
    Stage,
    Store,
    Tone,
    reached,
)
from tests.support.api import Client, auth
from tests.support.factories import dispatching, offered, order_request

# A wait that returns inside this saw its condition: the window asked for is 60 s.
WELL_INSIDE_THE_WINDOW_S = 30


async def _get(api: Client, path: str) -> tuple[int, Any]:
    response = await api.get(path, headers=auth())
    return response.status, await response.json()


async def test_until_decided_answers_as_soon_as_an_operator_decides(
    api: Client, store: Store
) -> None:
    op = await offered(store)
    # Whether the reject lands before the ask or during its wait, the answer is the same:
    # the rejected operation, at once.
    waiting = asyncio.create_task(_get(api, f"/api/v1/operations/{op.id}?wait_s=60&until=decided"))
    await store.reject(Click(op.id, "reject", op.confirm_digest, "ou_bob"))
    status, view = await asyncio.wait_for(waiting, WELL_INSIDE_THE_WINDOW_S)
    assert status == 200 and view["state"] == "rejected" and view["decision"]["by"] == "ou_bob"


async def test_what_already_is_final_or_decided_is_answered_at_once(api: Client) -> None:
    response = await api.post("/api/v1/operations", json=order_request(), headers=auth())
    view = await response.json()
    await api.post(f"/api/v1/operations/{view['id']}/cancel", headers=auth())
    for until in ("final", "decided"):
        status, seen = await asyncio.wait_for(
            _get(api, f"/api/v1/operations/{view['id']}?wait_s=60&until={until}"),
            WELL_INSIDE_THE_WINDOW_S,
        )
        assert status == 200 and seen["state"] == "cancelled", until


async def test_a_wait_that_runs_out_answers_the_operation_as_it_stands(
    api: Client, store: Store
) -> None:
    op = await offered(store)
    status, view = await _get(api, f"/api/v1/operations/{op.id}?wait_s=1&until=final")
    assert status == 200 and view["state"] == "awaiting_confirmation"


async def test_an_unknown_condition_is_a_422_naming_until(api: Client, store: Store) -> None:
    op = await offered(store)
    for query in ("until=done", "until=FINAL", "until=", "wait_s=1&until=soon"):
        status, body = await _get(api, f"/api/v1/operations/{op.id}?{query}")
        assert status == 422, query
        assert [f["field"] for f in body["error"]["fields"]] == ["until"], query


async def test_a_wait_reads_again_until_the_operation_moves_into_the_condition(
    store: Store,
) -> None:
    """The wait itself, given the operation as it was read before an operator decided: it
    finds the move on its next read and answers with the decided view."""
    op = await offered(store)
    await store.reject(Click(op.id, "reject", op.confirm_digest, "ou_bob"))
    view = await asyncio.wait_for(waited(store, op, 60, "decided"), WELL_INSIDE_THE_WINDOW_S)
    assert view.state == "rejected" and view.version > op.version
    unchanged = await waited(store, op, 0, "final")  # no wait asked: the view as it was read
    assert unchanged.state == "awaiting_confirmation"


async def test_until_final_follows_the_finality_stored_with_the_outcome_not_its_status(
    api: Client, store: Store
) -> None:
    """Final is what the outcome's domain declared, kept on its row: a status that reads final
    elsewhere ("filled") keeps a waiter waiting when its row says it is still working, and a
    status no list names ends the wait when its row says final."""
    op = await offered(store)
    claimed = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(claimed, Claimed)
    await dispatching(store, op.id)
    ledger = ExecutionLedger(store)
    still = {"en": "Filled, settling", "zh": "已成交，结算中"}
    working = Observation(
        Stage.INITIAL,
        "filled",
        Execution.SUBMITTED,
        answers_attempt=True,
        concludes=False,
        words=still,
        tone=Tone.WORKING,
        final=False,
    )
    await ledger.record_observation(op.id, working)
    loop = asyncio.get_running_loop()
    started = loop.time()
    status, view = await _get(api, f"/api/v1/operations/{op.id}?wait_s=1&until=final")
    assert status == 200 and loop.time() - started >= 1  # it waited its whole window
    assert (view["outcome"]["status"], view["outcome"]["final"]) == ("filled", False)
    assert view["outcome"]["words"] == still and not reached(
        OperationView.model_validate(view), "final"
    )

    waiting = asyncio.create_task(_get(api, f"/api/v1/operations/{op.id}?wait_s=60&until=final"))
    done = {"en": "Lamp lit", "zh": "灯已点亮"}
    lit = Observation(
        Stage.INITIAL, "lamp_lit", Execution.COMPLETED, words=done, tone=Tone.GOOD, final=True
    )
    await ledger.record_observation(op.id, lit)
    status, view = await asyncio.wait_for(waiting, WELL_INSIDE_THE_WINDOW_S)
    assert status == 200 and view["outcome"]["status"] == "lamp_lit"
    assert view["outcome"]["final"] is True and view["outcome"]["tone"] == "good"
    assert reached(OperationView.model_validate(view), "final")
