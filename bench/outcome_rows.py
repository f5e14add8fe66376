"""The rows bench/confirm_to_outcome.py prints: one per level and venue, beside the targets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

VENUE_LIMIT = 1200  # Hyperliquid's REST weight per minute per IP
# The targets, at TARGET_LEVEL operations confirmed at once.
TARGET_LEVEL = 100
TARGET_START_P99_MS = 500.0
TARGET_CARD_P99_MS = 1000.0


@dataclass(frozen=True)
class Row:
    operations: int
    start_p50: float
    start_p99: float
    card_p50: float
    card_p99: float
    seconds: float
    venue: str = "sim"
    weight: int | None = None  # venue request weight charged during the level (None: no limit)
    peak: int | None = None  # the most of it in one rolling minute
    refused: int = 0  # requests the venue refused for its rate limit (429)


def verdict(row: Row) -> str:
    if row.operations != TARGET_LEVEL:
        return ""
    start = "met" if row.start_p99 <= TARGET_START_P99_MS else "MISSED"
    card = "met" if row.card_p99 <= TARGET_CARD_P99_MS else "MISSED"
    return (
        f"start p99 <= {TARGET_START_P99_MS:.0f}ms {start}; "
        f"card p99 <= {TARGET_CARD_P99_MS:.0f}ms {card}"
    )


def print_table(
    rows: Sequence[Row],
    concurrency: int,
    workers: str,
    lock: str,
    raised_to: int | None,
    *,
    weights: bool,
) -> None:
    venues = "simulated venue and hlsandbox (emulator)" if weights else "simulated venue"
    print(
        f"confirm -> outcome (SQLite, {venues}, sandbox over ws), latency from the click; "
        f"executor concurrency {concurrency}, workers {workers}; card lock after an answer: "
        f"{lock}"
    )
    extra = f" | {'venue':>8} {'weight':>7} {'peak/min':>8} {'429s':>5}" if weights else ""
    print(
        f"{'operations':>10} | {'start p50':>10} {'start p99':>10} | "
        f"{'card p50':>9} {'card p99':>9} | {'all done s':>10}{extra}  target"
    )
    for r in rows:
        more = ""
        if weights:
            used = "-" if r.weight is None else str(r.weight)
            peak = "-" if r.peak is None else str(r.peak)
            refused = "-" if r.weight is None else str(r.refused)
            more = f" | {r.venue:>8} {used:>7} {peak:>8} {refused:>5}"
        print(
            f"{r.operations:>10} | {r.start_p50:>8.0f}ms {r.start_p99:>8.0f}ms | "
            f"{r.card_p50:>7.0f}ms {r.card_p99:>7.0f}ms | {r.seconds:>10.2f}{more}  {verdict(r)}"
        )
    print(
        f"targets at {TARGET_LEVEL} operations: executor start p99 <= "
        f"{TARGET_START_P99_MS / 1000:.1f} s, final card patched p99 <= "
        f"{TARGET_CARD_P99_MS / 1000:.0f} s",
        flush=True,
    )
    if weights:
        limit = (
            f"RAISED to {raised_to} per minute (--hl-ip-limit): the figures above do not "
            f"show the venue's own limit"
            if raised_to is not None and raised_to > VENUE_LIMIT
            else f"Hyperliquid's own, {VENUE_LIMIT} per minute per IP"
        )
        print(
            "venue request weight: what hlsandbox charged from the proposals to the last card "
            "(capabilities, filing pre-check, preflight, submit, follow-up reads; /info 2 or 20 "
            f"or 60, /exchange 1); peak/min: the most in one rolling minute; its IP limit: {limit}",
            flush=True,
        )
