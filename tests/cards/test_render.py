"""render_card: the card an operator decides on, rendered from the store's projection.

Views come from real operations (made and moved through the store, with the projection
the domain itself builds), rendered at a fixed instant in Asia/Shanghai (UTC+8).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cards.render import SHORT_DIGEST, render_card
from cards.strings import LANGS, Lang, text
from store.authority import Store
from store.envelope import Source
from store.lifecycle import State
from store.projection import operation_view
from store.records import Operation
from tests.support.cards import (
    SHANGHAI,
    T0,
    Drive,
    FixedClock,
    cancelled,
    confirmed,
    expired,
    finance_op,
    markdown_texts,
    message_op,
    nodes,
    plain_texts,
    rejected,
    superseded,
    tagged,
)
from tests.support.factories import offered

CARD_LIMIT_BYTES = 30 * 1024  # Lark 230025
INJECTION = "**bold** <at id=all></at> [x](http://evil)"
INJECTION_MARKERS = ("**bold**", "<at id=all>", "http://evil", "[x]")
CJK = re.compile(r"[\u3400-\u9fff\uff00-\uffef]")


@pytest.fixture
def clock(store: Store) -> FixedClock:
    fixed = FixedClock(T0)
    store.clock = fixed
    return fixed


def render(op: Operation, lang: Lang = "en", now: datetime = T0) -> dict[str, Any]:
    return render_card(operation_view(op), lang=lang, now=now, tz=SHANGHAI)


# -- reading a card ------------------------------------------------------------------------


def buttons(card: dict[str, Any]) -> list[dict[str, Any]]:
    return tagged(card, "button")


def status(card: dict[str, Any]) -> dict[str, Any] | None:
    return next((n for n in nodes(card) if n.get("element_id") == "status"), None)


def size(card: dict[str, Any]) -> int:
    """Bytes as the bot sends it (bot/lark/api.py `_compact`)."""
    return len(json.dumps(card, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def shown(value: Any, lang: Lang) -> str:
    if isinstance(value, bool):
        return text("yes" if value else "no", lang)
    return str(value)


# -- the open card -------------------------------------------------------------------------


async def test_every_term_is_shown_as_plain_text(store: Store, clock: FixedClock) -> None:
    view = operation_view(await finance_op(store))
    terms = view["terms"]["terms"]
    assert {term["name"] for term in terms} >= {"instrument", "side", "quantity", "limit_price"}
    card = render_card(view, now=T0, tz=SHANGHAI)
    plain, markdown = plain_texts(card), markdown_texts(card)
    for term in terms:
        line = f"{text('term.' + term['name'], 'en')}: {shown(term['value'], 'en')}"
        assert line in plain, line
        assert not any(line in each for each in markdown), line
    assert "Reduce only: no" in plain and "Quantity: 0.010" in plain
    assert card["header"]["title"]["tag"] == "plain_text"
    assert card["header"]["title"]["content"] == "Confirm order: BUY 0.010 BTC-PERP"


async def test_simulation_is_marked_on_a_simulated_card(store: Store, clock: FixedClock) -> None:
    card = render(await finance_op(store))
    marker = next(n for n in nodes(card) if n.get("element_id") == "simulated")
    assert marker["content"] == f"**{text('simulated', 'en')}**"
    assert card["header"]["subtitle"]["content"] == "SIMULATED"
    assert card["body"]["elements"][0] is marker  # before the terms, not below the fold


async def test_no_simulation_marker_on_a_real_executor(store: Store, clock: FixedClock) -> None:
    op = await message_op(store)
    assert not op.envelope.simulated
    card = render(op)
    assert not any(n.get("element_id") == "simulated" for n in nodes(card))
    dumped = json.dumps(card, ensure_ascii=False)
    assert "SIMULATED" not in dumped and text("simulated", "zh") not in dumped
    assert card["header"]["subtitle"]["content"] == "message.send"


async def test_executor_operation_and_short_digest(store: Store, clock: FixedClock) -> None:
    op = await finance_op(store)
    card = render(op)
    plain = plain_texts(card)
    assert "Executor: sim-venue r1" in plain
    assert f"Operation: {op.id}" in plain
    short = op.confirm_digest[:SHORT_DIGEST]
    assert SHORT_DIGEST == 12 and f"Digest: {short}" in plain
    # the full digest is for the buttons, not for reading
    assert not any(op.confirm_digest in each for each in plain + markdown_texts(card))


@pytest.mark.parametrize(
    ("now", "relative"),
    [
        pytest.param(T0, "in 15 min", id="at-proposal"),
        pytest.param(T0 + timedelta(minutes=14, seconds=30), "in 30 s", id="seconds-left"),
        pytest.param(T0 - timedelta(hours=2), "in 2h15m", id="hours-left"),
        pytest.param(T0 + timedelta(minutes=20), "5 min ago", id="past"),
    ],
)
async def test_expiry_is_absolute_in_the_timezone_and_relative_to_now(
    store: Store, clock: FixedClock, now: datetime, relative: str
) -> None:
    op = await finance_op(store)
    assert op.envelope.expires_at == datetime(2025, 3, 1, 1, 45, tzinfo=UTC)
    card = render(op, now=now)
    # 01:45 UTC is 09:45 in Shanghai
    assert f"Expires: 2025-03-01 09:45 CST ({relative})" in plain_texts(card)


async def test_confirm_and_reject_carry_exactly_the_callback_value(
    store: Store, clock: FixedClock
) -> None:
    op = await finance_op(store)
    card = render(op)
    found = {button["element_id"]: button for button in buttons(card)}
    assert set(found) == {"confirm", "reject", "reject_no_reason"}
    # the reject without a reason is a reject too: only the form's field tells them apart
    actions = {"confirm": "confirm", "reject": "reject", "reject_no_reason": "reject"}
    for element_id, button in found.items():
        action = actions[element_id]
        assert button["text"]["content"] == text(f"button.{element_id}", "en")
        assert button["behaviors"] == [
            {
                "type": "callback",
                "value": {"op": op.id, "action": action, "digest": op.confirm_digest, "v": 1},
            }
        ]
        assert set(button["behaviors"][0]["value"]) == {"op", "action", "digest", "v"}
    assert card["header"]["template"] == "orange"
    assert status(card) is None


async def test_the_card_is_json_2_0_and_updatable(store: Store, clock: FixedClock) -> None:
    card = render(await finance_op(store))
    assert card["schema"] == "2.0"
    assert card["config"]["update_multi"] is True
    assert card["config"]["locales"] == ["en_us", "zh_cn"]
    assert size(card) < CARD_LIMIT_BYTES


async def test_a_4000_character_message_fits_in_a_card(store: Store, clock: FixedClock) -> None:
    message = "".join(f"Delivery update, line {n:04d}. " for n in range(200))[:4000]
    assert len(message) == 4000
    op = await message_op(store, message)
    card = render(op)
    texts = plain_texts(card)
    assert "Message text (1 line · 4000 characters), sent exactly as shown:" in texts
    assert texts.count(message) == 1  # shown whole, once, never truncated
    assert size(card) < CARD_LIMIT_BYTES


async def test_a_4000_character_chinese_message_fits_in_a_card(
    store: Store, clock: FixedClock
) -> None:
    message = ("周五交货，请确认收货地址。" * 400)[:4000]
    op = await message_op(store, message)
    assert size(render(op, lang="zh")) < CARD_LIMIT_BYTES


# -- languages -----------------------------------------------------------------------------


async def test_chinese_card_has_chinese_labels(store: Store, clock: FixedClock) -> None:
    op = await finance_op(store)
    card = render(op, lang="zh")
    plain = plain_texts(card)
    assert card["header"]["title"]["content"] == "确认下单: BUY 0.010 BTC-PERP"
    assert "交易场所: sim" in plain and "数量: 0.010" in plain and "只减仓: 否" in plain
    assert "执行器: sim-venue r1" in plain and f"操作: {op.id}" in plain
    assert f"摘要: {op.confirm_digest[:SHORT_DIGEST]}" in plain
    assert any(each.startswith("过期时间: 2025-03-01 09:45 CST") for each in plain)
    assert {b["element_id"]: b["text"]["content"] for b in buttons(card)} == {
        "confirm": "确认",
        "reject": "拒绝",
        "reject_no_reason": "直接拒绝（不填原因）",
    }
    assert "**模拟：不会触及真实交易所**" in markdown_texts(card)


@pytest.mark.parametrize("lang", LANGS)
async def test_every_localized_text_has_every_locale(
    store: Store, clock: FixedClock, lang: Lang
) -> None:
    requester = Source("dev-agent", f"req-i18n-{lang}", "ou_carol")
    card = render(await finance_op(store, source=requester), lang=lang)
    localized = [node for node in nodes(card) if "i18n_content" in node]
    assert len(localized) >= 15
    for node in localized:
        assert set(node["i18n_content"]) == {"en_us", "zh_cn"}, node
        assert all(value.strip() for value in node["i18n_content"].values()), node
        lark_locale = {"en": "en_us", "zh": "zh_cn"}[lang]
        assert node["content"] == node["i18n_content"][lark_locale], node
    # labels in en_us are English and in zh_cn are Chinese
    for node in tagged(card, "plain_text"):
        if "i18n_content" in node and ": " in node["content"]:
            en_label = node["i18n_content"]["en_us"].split(": ", 1)[0]
            zh_label = node["i18n_content"]["zh_cn"].split(": ", 1)[0]
            assert not CJK.search(en_label) and CJK.search(zh_label), node


async def test_each_locale_reads_wholly_in_its_language(store: Store, clock: FixedClock) -> None:
    card = render(await finance_op(store), lang="zh")
    english = [node["i18n_content"]["en_us"] for node in nodes(card) if "i18n_content" in node]
    assert not [each for each in english if CJK.search(each)]


# -- injection -----------------------------------------------------------------------------


async def test_a_message_cannot_format_mention_or_link(store: Store, clock: FixedClock) -> None:
    op = await message_op(store, INJECTION)
    assert op.payload["text"] == INJECTION
    for lang in LANGS:
        card = render(op, lang=lang)
        assert INJECTION in plain_texts(card)
        for markdown in markdown_texts(card):
            assert not any(marker in markdown for marker in INJECTION_MARKERS), markdown


async def test_projection_titles_and_term_names_stay_plain(store: Store, clock: FixedClock) -> None:
    projection = {
        "title": INJECTION,
        "terms": [{"name": "venue", "value": INJECTION}, {"name": INJECTION, "value": "x"}],
        "simulated": True,
    }
    card = render(await offered(store, projection=projection))
    assert card["header"]["title"]["content"] == f"Confirm order: {INJECTION}"
    assert f"Venue: {INJECTION}" in plain_texts(card)
    for markdown in markdown_texts(card):
        assert not any(marker in markdown for marker in INJECTION_MARKERS), markdown


# -- closed states -------------------------------------------------------------------------


CLOSED: list[Any] = [
    pytest.param(
        confirmed,
        State.CLAIMED,
        "green",
        "Confirmed by <at id=ou_alice></at> at 2025-03-01 09:31 CST",
        "由 <at id=ou_alice></at> 于 2025-03-01 09:31 CST 确认",
        id="claimed",
    ),
    pytest.param(
        rejected,
        State.REJECTED,
        "red",
        "Rejected by <at id=ou_bob></at> at 2025-03-01 09:32 CST",
        "由 <at id=ou_bob></at> 于 2025-03-01 09:32 CST 拒绝",
        id="rejected",
    ),
    pytest.param(
        cancelled,
        State.CANCELLED,
        "grey",
        "Cancelled by the proposer",
        "发起方已取消",
        id="cancelled",
    ),
    pytest.param(
        expired,
        State.EXPIRED,
        "grey",
        "Expired at 2025-03-01 09:45 CST: propose again if still needed",
        "已于 2025-03-01 09:45 CST 过期：如仍需要请重新提交",
        id="expired",
    ),
    pytest.param(
        superseded,
        State.SUPERSEDED,
        "grey",
        "Superseded by a newer draft",
        "已被更新的草稿取代",
        id="superseded",
    ),
]


@pytest.mark.parametrize(("drive", "state", "template", "status_en", "status_zh"), CLOSED)
async def test_a_closed_card_has_no_buttons_and_says_what_happened(
    store: Store,
    clock: FixedClock,
    drive: Drive,
    state: State,
    template: str,
    status_en: str,
    status_zh: str,
) -> None:
    op = await finance_op(store)
    open_card = render(op)
    assert open_card["header"]["template"] == "orange" and len(buttons(open_card)) == 3

    closed = await drive(store, clock, op)
    assert closed.state is state
    expectations: tuple[tuple[Lang, str], ...] = (("en", status_en), ("zh", status_zh))
    for lang, expected in expectations:
        card = render(closed, lang=lang, now=clock.at)
        assert buttons(card) == []
        assert not any("behaviors" in node for node in nodes(card))
        assert card["header"]["template"] == template
        line = status(card)
        assert line is not None and line["tag"] == "markdown"
        assert line["content"] == expected
        assert line["i18n_content"] == {"en_us": status_en, "zh_cn": status_zh}
        # the terms are still there to read
        assert "Quantity: 0.010" in plain_texts(card) or "数量: 0.010" in plain_texts(card)


async def test_a_decision_names_the_operator_who_made_it(store: Store, clock: FixedClock) -> None:
    op = await confirmed(store, clock, await finance_op(store))
    assert op.decided_by == "ou_alice" and op.decided_at == T0 + timedelta(minutes=1)
    view = operation_view(op)
    assert view["decision"] == {
        "action": "confirm",
        "by": "ou_alice",
        "at": "2025-03-01T01:31:00Z",
        "reason": None,
    }
    line = status(render_card(view, now=clock.at, tz=SHANGHAI))
    assert line is not None and "<at id=ou_alice></at>" in line["content"]
