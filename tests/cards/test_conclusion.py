"""The conclusion text and webhook body built from the projection (pure)."""

from __future__ import annotations

from pathlib import Path
from zoneinfo import ZoneInfo

from bot.config.profiles import dev_config
from cards.conclusion import REPLY_MAX_CHARS, Voice, outcome_parts, reply_text, webhook_body
from cards.outcomes import outcome_lines
from store import World
from tests.support.conclusions import outcome, projection


def test_the_reply_names_terms_operator_outcome_and_card() -> None:
    text = reply_text(projection(), outcome())
    assert text.splitlines() == [
        "BUY 0.010 BTC-PERP: Filled · SIMULATED",
        "Confirmed by ou_alice at 2026-12-03 04:00 UTC",
        "Filled 0.010 at 60,000",
        "Fee unknown",
        "Card: om_card · operation 01OPERATION",
    ]


def test_the_reply_speaks_the_cards_language_zone_and_names() -> None:
    voice = Voice("zh", ZoneInfo("Asia/Shanghai"), {"ou_alice": "Alice"})
    detail = {"filled_qty": "0.010", "avg_price": "60000", "fees": "0.3", "fee_currency": "USDC"}
    text = reply_text(projection(), outcome(detail=detail), voice)
    assert text.splitlines() == [
        "BUY 0.010 BTC-PERP：已成交 · 模拟",
        "由 Alice 于 2026-12-03 12:00 CST 确认",
        "成交 0.010，均价 60,000",
        "手续费 0.30 USDC",
        "卡片：om_card · 操作 01OPERATION",
    ]
    # the card shows the same words for the same outcome
    card_detail = [
        line for line in outcome_lines(outcome(detail=detail), world=World.SIMULATED, lang="zh")
    ]
    assert card_detail[1]["text"]["content"] == "成交 0.010，均价 60,000; 手续费 0.30 USDC"


def test_a_reconciled_reply_names_the_outcome_it_settles() -> None:
    text = reply_text(projection(), outcome(stage="reconciled", reconciles_digest="u" * 64))
    assert text.startswith("Reconciled: BUY 0.010 BTC-PERP is Filled · SIMULATED")
    assert "u" * 12 in text


def test_the_reply_is_bounded_however_long_the_reason_and_says_it_was_cut() -> None:
    text = reply_text(projection(), outcome(status="rejected", detail={"reason": "x" * 10_000}))
    shown, rest = text.split("…", 1)
    assert len(text) < REPLY_MAX_CHARS and "x" * 400 in shown
    assert rest.startswith(" (cut: the first 499 of 10000 characters are shown)\nCard: ")


def test_the_webhook_body_carries_both_digests_and_the_stage() -> None:
    body = webhook_body("01DELIVERY", projection(), outcome(), "2026-12-03T04:00:01Z")
    assert body["delivery_id"] == "01DELIVERY" and body["operation_id"] == "01OPERATION"
    assert body["confirm_digest"] == "c" * 64 and body["outcome_digest"] == "o" * 64
    assert (body["stage"], body["outcome"], body["simulated"]) == ("initial", "filled", True)


def test_a_declined_operation_names_who_rejected_it_and_confirms_nobody() -> None:
    view = projection(
        decision={"action": "reject", "by": "ou_bob", "at": "2026-12-03T04:00:00Z"},
        state="rejected",
    )
    declined = outcome(status="declined", detail={"by": "ou_bob", "at": "2026-12-03T04:00:00Z"})
    text = reply_text(view, declined)
    assert text.splitlines()[0] == "BUY 0.010 BTC-PERP: Rejected — nothing executed · SIMULATED"
    assert "Rejected by ou_bob at 2026-12-03 04:00 UTC" in text and "Confirmed" not in text
    body = webhook_body("01DELIVERY", view, declined, "2026-12-03T04:00:01Z")
    assert (body["outcome"], body["confirmed_by"]) == ("declined", None)


def test_an_expired_operation_says_nobody_decided() -> None:
    view = projection(decision=None, state="expired")
    expired = outcome(status="expired", detail={"expired_at": "2026-12-03T04:00:00Z"})
    text = reply_text(view, expired)
    assert "Nobody decided before 2026-12-03 04:00 UTC: nothing was run" in text
    assert text.splitlines()[0] == "BUY 0.010 BTC-PERP: Expired — nothing executed · SIMULATED"
    assert webhook_body("01DELIVERY", view, expired, "x")["confirmed_by"] is None


def test_the_dev_profile_has_the_documented_callback_secret(tmp_path: Path) -> None:
    config = dev_config(tmp_path)
    assert config.callback_secret("dev-agent", "dev") == "dev-callback-secret"
    assert config.callback_secret("dev-agent", "other") is None


def test_the_reply_and_the_webhook_say_the_world_it_acted_in() -> None:
    emulated = projection(world="emulator", simulated=True)
    assert reply_text(emulated, outcome()).splitlines()[0] == (
        "BUY 0.010 BTC-PERP: Filled · EMULATOR"
    )
    zh = reply_text(emulated, outcome(), Voice("zh")).splitlines()[0]
    assert zh == "BUY 0.010 BTC-PERP：已成交 · 仿真"
    live = projection(world="live", simulated=False)
    assert reply_text(live, outcome()).splitlines()[0] == "BUY 0.010 BTC-PERP: Filled · LIVE"
    body = webhook_body("01DELIVERY", live, outcome(), "2026-12-03T04:00:01Z")
    assert (body["world"], body["simulated"]) == ("live", False)


def test_a_kind_that_is_no_venue_has_no_world_in_its_reply_or_webhook() -> None:
    message = projection(world=None, simulated=False)
    assert reply_text(message, outcome()).splitlines()[0] == "BUY 0.010 BTC-PERP: Filled"
    body = webhook_body("01DELIVERY", message, outcome(), "2026-12-03T04:00:01Z")
    assert (body["world"], body["simulated"]) == (None, False)


def test_what_to_do_next_is_said_after_the_reason_in_every_language() -> None:
    """A runner's hint (a fenced order: nothing was placed, propose it again) reaches the
    reply, and through the same words the card, `countersign show` and the dashboard."""
    detail = {
        "reason": "the request never landed",
        "hint": "nothing was placed; propose the order again for a new confirmation",
    }
    assert reply_text(projection(), outcome(status="not_submitted", detail=detail)).splitlines()[
        2:4
    ] == [
        "Reason: the request never landed",
        "Next: nothing was placed; propose the order again for a new confirmation",
    ]
    assert outcome_parts(detail, "zh")[1] == (
        "下一步：nothing was placed; propose the order again for a new confirmation"
    )
    # words from outside, through the one rule for them: a mention is defused, never sent
    [said] = outcome_parts({"hint": "ping <at id=all></at>"}, "en")
    assert said.startswith("Next: ping ") and "<at" not in said
