"""Every answer shape Hyperliquid gives, read into our states (reference/venues.md §1.2, §1.5)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from store import World
from workers.domains.finance.hyperliquid import answers, orders
from workers.domains.finance.venues.model import VenueOrder

AT = datetime(2026, 12, 6, tzinfo=UTC)


def ok(*statuses: object) -> dict[str, object]:
    return {"status": "ok", "response": {"type": "order", "data": {"statuses": list(statuses)}}}


def test_each_order_status_shape() -> None:
    parsed = answers.placed(
        ok(
            {"resting": {"oid": 7, "cloid": "0x" + "0" * 32}},
            {"filled": {"totalSz": "0.02", "avgPx": "1891.4", "oid": 8}},
            {"error": "Order must have minimum value of $10."},
            "waitingForTrigger",
            "waitingForFill",
        ),
        5,
    )
    assert [p.kind for p in parsed] == ["resting", "filled", "error", "waiting", "waiting"]
    assert parsed[0].oid == 7
    assert (parsed[1].total_sz, parsed[1].avg_px) == (Decimal("0.02"), Decimal("1891.4"))
    assert parsed[2].text == "Order must have minimum value of $10."


def test_whole_payload_error_and_unreadable_answers() -> None:
    err = {"status": "err", "response": "User or API Wallet 0xabc does not exist."}
    assert answers.whole_error(err) == "User or API Wallet 0xabc does not exist."
    assert answers.identity_mismatch(str(answers.whole_error(err)))
    assert answers.whole_error(ok("waitingForFill")) is None
    for bad in ({"status": "ok"}, None, ok({"weird": 1}), {"error": "Could not parse JSON"}):
        with pytest.raises(answers.Unreadable):
            answers.placed(bad, 1)
    with pytest.raises(answers.Unreadable, match="2 statuses for 1 orders"):
        answers.placed(ok("waitingForFill", "waitingForFill"), 1)


def test_nonce_and_expiry_errors_are_not_decisive() -> None:
    assert answers.nonce_or_expiry("Invalid nonce: duplicate nonce 1741107452532")
    assert answers.nonce_or_expiry("Action expired at 1741107452532")
    assert not answers.nonce_or_expiry("Order must have minimum value of $10.")
    assert not answers.identity_mismatch("Insufficient margin to place order.")


def test_order_status_records() -> None:
    assert answers.record({"status": "unknownOid"}) is None
    record = answers.record(
        {
            "status": "order",
            "order": {
                "order": {
                    "coin": "BTC",
                    "side": "A",
                    "limitPx": "61000.0",
                    "sz": "0.4",
                    "oid": 9,
                    "timestamp": 1765000000123,
                    "isTrigger": False,
                    "origSz": "1.0",
                    "reduceOnly": True,
                    "tif": "Gtc",
                    "cloid": "0x" + "1" * 32,
                },
                "status": "open",
                "statusTimestamp": 1765000000999,
            },
        }
    )
    assert record is not None
    assert (record.oid, record.orig_sz, record.remaining) == (9, Decimal("1.0"), Decimal("0.4"))
    assert record.side == "sell" and record.reduce_only and record.tif == "Gtc"
    assert record.created_at == datetime(2025, 12, 6, 5, 46, 40, 123000, tzinfo=UTC)
    with pytest.raises(answers.Unreadable):
        answers.record({"status": "order", "order": {}})


@pytest.mark.parametrize(
    ("venue", "trigger", "filled", "ours", "reason"),
    [
        ("open", False, "0", "resting", None),
        ("open", False, "0.5", "partially_filled", None),
        ("open", True, "0", "accepted", None),
        ("filled", False, "1", "filled", None),
        ("triggered", True, "1", "filled", None),
        ("canceled", False, "0", "cancelled", "cancelled at the venue (canceled)"),
        ("marginCanceled", False, "0", "cancelled", "cancelled by the venue (marginCanceled)"),
        ("siblingFilledCanceled", True, "0", "cancelled", "(siblingFilledCanceled)"),
        ("scheduledCancel", False, "0", "cancelled", "(scheduledCancel)"),
        ("rejected", False, "0", "rejected", "rejected by the venue (rejected)"),
        ("tickRejected", False, "0", "rejected", "(tickRejected)"),
        ("minTradeNtlRejected", False, "0", "rejected", "(minTradeNtlRejected)"),
    ],
)
def test_status_mapping(
    venue: str, trigger: bool, filled: str, ours: str, reason: str | None
) -> None:
    status, why = answers.status_of(venue, trigger, Decimal(filled), Decimal(1))
    assert status == ours
    if reason is None:
        assert why is None
    else:
        assert why is not None and reason in why
    with pytest.raises(answers.Unreadable):
        answers.status_of("somethingNew", False, Decimal(0), Decimal(1))


def fill(oid: int, tid: int, sz: str, px: str, **extra: object) -> dict[str, object]:
    base: dict[str, object] = {
        "coin": "BTC",
        "px": px,
        "sz": sz,
        "side": "B",
        "time": 1765000000000 + tid,
        "oid": oid,
        "tid": tid,
        "crossed": True,
        "fee": "0.027",
        "feeToken": "USDC",
    }
    return base | extra


def test_fills_join_on_oid_and_a_missing_fee_is_unknown(
    new_order: Callable[..., VenueOrder],
) -> None:
    raw = [
        fill(1, 2, "0.001", "60000"),
        fill(2, 3, "9", "1"),
        fill(1, 4, "0.002", "60030", crossed=False),
    ]
    raw[2].pop("fee")
    fills = answers.fills_of(raw, 1)
    assert [f.fill_id for f in fills] == [2, 4]
    assert fills[0].fee == Decimal("0.027") and fills[0].liquidity == "taker"
    assert fills[1].fee is None and fills[1].liquidity == "maker"
    order = new_order(quantity=Decimal("0.003"))
    terms = answers.terms_of(order)[0]
    state = answers.state(
        terms,
        World.EMULATOR,
        status="filled",
        reason=None,
        filled=Decimal("0.003"),
        remaining=Decimal(0),
        fills=fills,
        avg_px=None,
        created_at=AT,
        updated_at=AT,
    )
    assert state.fees is None  # one fee unknown: the sum is unknown, never a partial zero
    assert state.avg_price == Decimal("60020")
    assert state.world == World.EMULATOR


def test_an_answer_alone_leaves_fees_unknown(new_order: Callable[..., VenueOrder]) -> None:
    order = new_order(
        quantity=Decimal("0.002"), time_in_force="IOC", protective=(Decimal("50000"), None)
    )
    statuses = [
        answers.Placed("filled", oid=3, total_sz=Decimal("0.001"), avg_px=Decimal("60000")),
        answers.Placed("waiting"),
    ]
    state = orders.from_answer(order, statuses, World.TESTNET, AT)
    assert state.status == "cancelled" and "IOC" in str(state.reason)
    assert state.filled_qty == Decimal("0.001") and state.fees is None
    assert state.children[0].status == "accepted"
    assert state.children[0].client_id == order.client_id + ":sl"


def test_evidence_terms_round_trip(new_order: Callable[..., VenueOrder]) -> None:
    order = new_order(
        protective=(Decimal("55000"), Decimal("65000.5")), max_slippage_bps=Decimal("12.5")
    )
    assert answers.order_from_json(answers.order_json(order)) == order
