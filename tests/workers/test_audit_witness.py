"""The witness's pure parts: the head line read back exactly, its uuid within Lark's 50
characters and the same for replicas, and the next time the clock reads `witness_at`."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from zoneinfo import ZoneInfo

from store import witness_text, witness_uuid, witnessed_head
from workers.audit_witness import next_witness

HASH = "ab" * 32


def test_the_line_is_read_back_as_the_head_it_says_and_nothing_else_is() -> None:
    text = witness_text(1234, HASH, datetime(2026, 12, 6, 9, 0, tzinfo=UTC))
    assert witnessed_head(text) == (1234, HASH)
    assert witnessed_head(f"quoted: {text}") == (1234, HASH)  # a reply quoting it still names it
    assert witnessed_head("countersign audit chain head: entry 12, sha256 abc") is None
    assert witnessed_head(text.replace(HASH, HASH.upper())) is None  # only what the app writes


def test_the_uuid_fits_lark_and_is_the_same_for_the_same_head_day_and_chat() -> None:
    day = date(2026, 12, 6)
    uuid = witness_uuid(day, "oc_" + "x" * 60, 10**12)
    assert len(uuid) <= 50
    assert witness_uuid(day, "oc_ops", 7) == witness_uuid(day, "oc_ops", 7)
    assert (
        len(
            {
                witness_uuid(day, "oc_ops", 7),
                witness_uuid(day, "oc_desk", 7),
                witness_uuid(day, "oc_ops", 8),
                witness_uuid(date(2026, 12, 7), "oc_ops", 7),
            }
        )
        == 4
    )


def test_the_next_witness_is_today_before_its_time_and_tomorrow_after_it() -> None:
    shanghai = ZoneInfo("Asia/Shanghai")
    nine = time(9, 0)
    before = datetime(2026, 12, 6, 0, 30, tzinfo=UTC)  # 08:30 in Shanghai
    assert next_witness(before, nine, shanghai) == datetime(2026, 12, 6, 1, 0, tzinfo=UTC)
    at_it = datetime(2026, 12, 6, 1, 0, tzinfo=UTC)  # 09:00 there: the next is tomorrow's
    assert next_witness(at_it, nine, shanghai) == datetime(2026, 12, 7, 1, 0, tzinfo=UTC)
    late = datetime(2026, 12, 6, 23, 0, tzinfo=UTC)  # 07:00 on the 7th there
    assert next_witness(late, nine, shanghai) == datetime(2026, 12, 7, 1, 0, tzinfo=UTC)
