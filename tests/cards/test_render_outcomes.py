"""Outcomes on the card and in the projection: original and reconciled stages, both shown."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cards.render import render_card
from store import (
    Claimed,
    Click,
    Execution,
    ExecutionLedger,
    Observation,
    Operation,
    OperationView,
    Stage,
    Store,
    operation_view,
    view,
)
from tests.support.cards import STATUS_LINES, outcome_of
from tests.support.factories import dispatching, offered
from tests.support.projection import edited
from workers.execution_failures import meant


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
    await dispatching(store, op.id)
    unknown = await ledger.record_observation(
        op.id,
        meant(
            op.kind,
            Observation(
                Stage.INITIAL, "unknown", Execution.SUBMISSION_UNKNOWN, {"reason": "response lost"}
            ),
        ),
    )
    await ledger.record_observation(
        op.id,
        meant(
            op.kind,
            Observation(
                Stage.RECONCILED,
                "filled",
                Execution.RECONCILED,
                {"filled_qty": "0.010", "avg_price": "60000", "fees": None},
                reconciles=unknown.outcome_digest,
            ),
        ),
    )
    current = await store.get(op.id)
    assert current is not None
    projection = await view(store, current)
    assert projection.outcome is not None
    assert projection.outcome.status == "filled"
    assert projection.outcome.reconciles_digest == unknown.outcome_digest
    assert [o.stage for o in projection.outcomes] == ["initial", "reconciled"]

    card = render_card(projection, now=current.updated_at)
    lines = markdown(card)
    assert lines[:2] == [  # near the top, before the decision and the terms
        "**Submission unknown — reconciling · SIMULATED**",
        "**Reconciled: Filled · SIMULATED**",
    ]
    assert card["header"]["title"]["content"] == "Filled"
    assert "Filled 0.010 at 60,000; Fee unknown" in plain(card)
    assert card["header"]["template"] == "green"
    assert '"tag": "button"' not in json.dumps(card)
    zh = render_card(projection, lang="zh", now=current.updated_at)
    assert "**核对结果：已成交 · 模拟**" in markdown(zh)


async def test_a_preflight_refusal_is_red_with_its_reason(store: Store) -> None:
    op = await claimed(store)
    ledger = ExecutionLedger(store)
    await ledger.begin_preflight(op.id)
    await ledger.record_observation(
        op.id,
        meant(
            op.kind,
            Observation(
                Stage.INITIAL,
                "preflight_rejected",
                Execution.PREFLIGHT_REJECTED,
                {"reason": "price 60000.25 is off the 0.5 tick"},
            ),
        ),
    )
    current = await store.get(op.id)
    assert current is not None
    card = render_card(await view(store, current), now=current.updated_at)
    assert card["header"]["template"] == "red"
    assert "**Refused by pre-check — nothing sent · SIMULATED**" in markdown(card)
    assert card["header"]["title"]["content"] == "Refused by pre-check — nothing sent"
    assert "Reason: price 60000.25 is off the 0.5 tick" in plain(card)


def outcome_view(op: Operation, *outcomes: dict[str, Any], execution: str) -> OperationView:
    return edited(
        operation_view(op),
        state="outcome_observed",
        execution={"state": execution},
        outcomes=list(outcomes),
        outcome=outcomes[-1],
    )


@pytest.mark.parametrize("status", sorted(STATUS_LINES))
async def test_every_outcome_status_reads_right_in_en_and_zh_and_says_simulated(
    store: Store, status: str
) -> None:
    op = await claimed(store)
    en, zh, colour = STATUS_LINES[status]
    projection = outcome_view(
        op,
        outcome_of(status, reason="why"),
        execution="completed",
    )
    for lang, line in (("en", en), ("zh", zh)):
        card = render_card(projection, lang=lang, now=op.updated_at)
        marker = "SIMULATED" if lang == "en" else "模拟"
        assert f"**{line} · {marker}**" in markdown(card), markdown(card)
        assert card["header"]["template"] == colour
        assert card["header"]["title"]["content"] == line  # the header says what happened
        assert "executing" not in json.dumps(card) and "执行中" not in json.dumps(card)


async def test_progress_replaces_its_line_and_protective_orders_have_their_own_results(
    store: Store,
) -> None:
    op = await claimed(store)
    protective = [
        {"role": "stop_loss", "trigger_price": "57000", "status": "cancelled", "reason": "oco"},
        {"role": "take_profit", "trigger_price": "65000", "status": "filled", "reason": None},
    ]
    projection = outcome_view(
        op,
        outcome_of("resting"),
        outcome_of(
            "filled", filled_qty="0.010", avg_price="60000", fees="0.3", protective=protective
        ),
        execution="completed",
    )
    card = render_card(projection, now=op.updated_at)
    lines = markdown(card)
    assert "**Filled · SIMULATED**" in lines and not any("Resting" in line for line in lines)
    [detail] = [line for line in plain(card) if line.startswith("Filled 0.010")]
    assert "Fees 0.3" in detail
    assert "Stop loss 57,000: cancelled (oco)" in detail
    assert "Take profit 65,000: triggered, filled" in detail
    zh = json.dumps(render_card(projection, lang="zh", now=op.updated_at), ensure_ascii=False)
    assert "止损 57,000: 已撤销 (oco)" in zh and "止盈 65,000: 已触发成交" in zh


async def test_a_claimed_operation_not_yet_executed_says_executing(store: Store) -> None:
    op = await claimed(store)
    card = render_card(await view(store, op), now=op.updated_at)
    assert card["header"]["title"]["content"] == "Confirmed — executing"
    assert card["header"]["template"] == "wathet"
    zh = render_card(await view(store, op), lang="zh", now=op.updated_at)
    assert zh["header"]["title"]["content"] == "已确认 — 执行中"


async def test_a_sent_message_names_its_message_id(store: Store) -> None:
    op = await claimed(store)
    projection = outcome_view(
        op,
        outcome_of("sent", "message.send", message_id="om_abc"),
        execution="completed",
    )
    projection = edited(projection, simulated=False, world=None)  # a message: not a venue
    card = render_card(projection, now=op.updated_at)
    assert "**Sent**" in markdown(card) and "Message om_abc" in plain(card)


async def test_an_answer_from_the_other_side_is_shown_as_text(store: Store) -> None:
    op = await claimed(store)
    answer = '{"refund_id": "rf_1", "note": "<at id=all></at> **done**"}'
    projection = outcome_view(op, outcome_of("filled", answer=answer), execution="completed")
    card = render_card(projection, now=op.updated_at)
    [line] = [each for each in plain(card) if each.startswith("Answer: ")]
    assert "rf_1" in line
    assert not any("rf_1" in each for each in markdown(card))  # plain text, never markup
    zh = render_card(projection, lang="zh", now=op.updated_at)
    assert any(each.startswith("答复：") and "rf_1" in each for each in plain(zh))
