"""Outcomes on the card and in the projection: original and reconciled stages, both shown."""

from __future__ import annotations

import json
from typing import Any

from cards.render import render_card
from store.authority import Claimed, Click, Store
from store.execution import ExecutionLedger, view
from store.lifecycle import Execution
from store.records import Operation
from tests.factories import offered


async def claimed(store: Store) -> Operation:
    op = await offered(store)
    result = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(result, Claimed)
    return result.operation


def markdown(card: dict[str, Any]) -> list[str]:
    return [e["content"] for e in card["body"]["elements"] if e.get("tag") == "markdown"]


def plain(card: dict[str, Any]) -> list[str]:
    return [e["text"]["content"] for e in card["body"]["elements"] if e.get("tag") == "div"]


async def test_an_unknown_then_reconciled_fill_shows_both_stages(store: Store) -> None:
    op = await claimed(store)
    ledger = ExecutionLedger(store)
    for step in (Execution.PREFLIGHT, Execution.RESERVED, Execution.DISPATCHING):
        await ledger.step(op.id, step)
    unknown = await ledger.record_outcome(
        op.id,
        stage="initial",
        status="unknown",
        detail={"reason": "response lost"},
        execution=Execution.SUBMISSION_UNKNOWN,
    )
    await ledger.record_outcome(
        op.id,
        stage="reconciled",
        status="filled",
        detail={"filled_qty": "0.010", "avg_price": "60000", "fees": None},
        execution=Execution.RECONCILED,
        reconciles=unknown.outcome_digest,
    )
    current = await store.get(op.id)
    assert current is not None
    projection = await view(store, current)
    assert projection["outcome"]["status"] == "filled"
    assert projection["outcome"]["reconciles_digest"] == unknown.outcome_digest
    assert [o["stage"] for o in projection["outcomes"]] == ["initial", "reconciled"]

    card = render_card(projection, now=current.updated_at)
    lines = markdown(card)
    assert "**Submission unknown: reconciling · SIMULATED**" in lines
    assert "**Reconciled: Filled · SIMULATED**" in lines
    assert "Filled 0.010 at 60000; Fee unknown" in plain(card)
    assert card["header"]["template"] == "green"
    assert '"tag": "button"' not in json.dumps(card)
    zh = render_card(projection, lang="zh", now=current.updated_at)
    assert "**核对结果：已成交 · 模拟**" in markdown(zh)


async def test_a_preflight_refusal_is_red_with_its_reason(store: Store) -> None:
    op = await claimed(store)
    ledger = ExecutionLedger(store)
    await ledger.step(op.id, Execution.PREFLIGHT)
    await ledger.record_outcome(
        op.id,
        stage="initial",
        status="preflight_rejected",
        detail={"reason": "price 60000.25 is off the 0.5 tick"},
        execution=Execution.PREFLIGHT_REJECTED,
    )
    current = await store.get(op.id)
    assert current is not None
    card = render_card(await view(store, current), now=current.updated_at)
    assert card["header"]["template"] == "red"
    assert "**Not sent: the pre-check refused it · SIMULATED**" in markdown(card)
    assert "Reason: price 60000.25 is off the 0.5 tick" in plain(card)
