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

from cards.outcomes import outcome_title
from cards.render import SHORT_DIGEST, render_card
from cards.strings import LANGS, Lang, text
from store import LOCAL_WORLDS, Operation, Source, State, Store, World, operation_view
from tests.support.cards import (
    SHANGHAI,
    T0,
    Drive,
    FixedClock,
    cancelled,
    confirmed,
    element,
    expired,
    fields,
    finance_op,
    markdown_texts,
    message_op,
    nodes,
    plain_texts,
    rejected,
    said,
    superseded,
    tagged,
)
from tests.support.factories import offered
from tests.support.projection import outcome_view_of

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


# the order's numbers as a person reads them: grouped, at their precision (the terms keep
# the digits as filed: "60000", "1.5 USDC")
GROUPED = {"60000": "60,000", "57000": "57,000", "65000": "65,000", "1.5 USDC": "1.50 USDC"}


def shown(value: Any, lang: Lang) -> str:
    if isinstance(value, bool):
        return text("yes" if value else "no", lang)
    return GROUPED.get(str(value), str(value))


# -- the open card -------------------------------------------------------------------------


async def test_every_term_is_shown_as_plain_text(store: Store, clock: FixedClock) -> None:
    view = operation_view(await finance_op(store))
    terms = view.terms["terms"]
    assert {term["name"] for term in terms} >= {"instrument", "side", "quantity", "limit_price"}
    card = render_card(view, now=T0, tz=SHANGHAI)
    grid, markdown = fields(card), markdown_texts(card)
    for term in terms:
        label = term["label"]["en"]  # the domain's own label, carried by the projection
        assert grid[label] == shown(term["value"], "en"), label
        assert not any(shown(term["value"], "en") in each for each in markdown), label
    assert grid["Reduce only"] == "no" and grid["Quantity"] == "0.010"
    assert grid["Limit price"] == "60,000" and grid["Max fee"] == "1.50 USDC"
    assert {term["name"]: term["value"] for term in terms}["limit_price"] == "60000"
    assert card["header"]["title"] == {
        "tag": "plain_text",
        "content": "Order to confirm",
        "i18n_content": {"en_us": "Order to confirm", "zh_cn": "待确认订单"},
    }
    assert card["header"]["subtitle"]["content"] == "BUY 0.010 BTC-PERP"


async def test_short_terms_share_a_row_and_long_ones_have_their_own(
    store: Store, clock: FixedClock
) -> None:
    card = render(await finance_op(store))
    rows = [n for n in card["body"]["elements"] if n["tag"] == "column_set"]
    paired = [row for row in rows if len(row["columns"]) == 2]
    assert len(paired) >= 4  # side/quantity, instrument/price, ... two to a row on a phone
    for row in paired:
        assert [c["weight"] for c in row["columns"]] == [1, 1]
    long_value = "x" * 40
    projection = {"title": "t", "terms": [{"name": "venue", "value": long_value}]}
    alone = render(await offered(store, projection=projection))
    assert fields(alone)["Venue"] == long_value
    assert not [n for n in nodes(alone) if n.get("tag") == "column" and n.get("weight") == 1]


async def test_simulation_is_tagged_in_the_header(store: Store, clock: FixedClock) -> None:
    card = render(await finance_op(store))
    [tag] = card["header"]["text_tag_list"]
    assert tag["text"]["content"] == "SIMULATED"
    assert tag["text"]["i18n_content"] == {"en_us": "SIMULATED", "zh_cn": "模拟"}


# the header's mark per world: its words in en and zh, and its colour (LIVE: the warning red)
WORLD_TAGS = {
    World.SIMULATED: ("SIMULATED", "模拟", "orange"),
    World.EMULATOR: ("EMULATOR", "仿真", "turquoise"),
    World.TESTNET: ("TESTNET", "测试网", "blue"),
    World.LIVE: ("LIVE", "实盘", "red"),
}


@pytest.mark.parametrize("world", list(World), ids=str)
async def test_every_world_is_tagged_in_the_header_and_on_its_outcomes(
    store: Store, clock: FixedClock, world: World
) -> None:
    en, zh, colour = WORLD_TAGS[world]
    op = await finance_op(store, world=world, simulated=world in LOCAL_WORLDS)
    card = render(op)
    [tag] = card["header"]["text_tag_list"]
    assert (tag["text"]["content"], tag["color"]) == (en, colour)
    assert tag["text"]["i18n_content"] == {"en_us": en, "zh_cn": zh}
    assert render(op, "zh")["header"]["text_tag_list"][0]["text"]["content"] == zh
    others = [words for other, (words, _, _) in WORLD_TAGS.items() if other is not world]
    assert not any(words in json.dumps(card) for words in others)

    filled = outcome_view_of(
        {"stage": "initial", "status": "filled", "words": {"en": "Filled", "zh": "已成交"}}
    )
    assert outcome_title(filled, world, "en") == f"Filled · {en}"
    assert outcome_title(filled, world, "zh") == f"已成交 · {zh}"


async def test_no_simulation_marker_on_a_real_executor(store: Store, clock: FixedClock) -> None:
    op = await message_op(store)
    assert not op.envelope.simulated
    card = render(op)
    assert "text_tag_list" not in card["header"]
    dumped = json.dumps(card, ensure_ascii=False)
    assert not any(
        text(f"world.{world.value}", lang) in dumped for world in World for lang in LANGS
    )
    assert card["header"]["title"]["content"] == "Message to approve"


async def test_the_audit_details_are_a_footer_note(store: Store, clock: FixedClock) -> None:
    op = await finance_op(store)
    card = render(op)
    short = op.confirm_digest[:SHORT_DIGEST]
    assert SHORT_DIGEST == 12
    assert said(card, "audit") == f"Operation {op.id} · digest {short} · sim-venue r1"
    assert card["body"]["elements"][-1] == element(card, "audit")
    note = element(card, "audit")
    assert note is not None and note["text"]["text_size"] == "notation"
    # the full digest is for the buttons, not for reading
    assert not any(op.confirm_digest in each for each in plain_texts(card) + markdown_texts(card))


async def test_who_proposed_it_and_why(store: Store, clock: FixedClock) -> None:
    source = Source("dev-agent", "req-why", "ou_carol", reason="Hedge the weekend gap")
    card = render(await finance_op(store, source=source))
    assert (
        said(card, "proposer") == "Proposed by dev-agent · Requested by: ou_carol (unverified id)"
    )
    assert said(card, "why") == "Why: Hedge the weekend gap"
    assert said(card, "why", "zh_cn") == "理由：Hedge the weekend gap"
    named = render_card(
        operation_view(await finance_op(store, source=Source("dev-agent", "req-n", "ou_carol"))),
        now=T0,
        people={"ou_carol": "Carol"},
    )
    assert said(named, "proposer") == "Proposed by dev-agent for Carol"
    assert said(named, "why") is None


@pytest.mark.parametrize(
    "now",
    [
        pytest.param(T0, id="at-proposal"),
        pytest.param(T0 + timedelta(minutes=14, seconds=30), id="seconds-left"),
        pytest.param(T0 - timedelta(hours=2), id="hours-left"),
        pytest.param(T0 + timedelta(minutes=20), id="past"),
    ],
)
async def test_expiry_is_absolute_in_the_timezone_whatever_the_time_now(
    store: Store, clock: FixedClock, now: datetime
) -> None:
    """A card is a static message: "in 15 min" on it would go stale, so it says when."""
    op = await finance_op(store)
    assert op.envelope.expires_at == datetime(2025, 3, 1, 1, 45, tzinfo=UTC)
    card = render(op, now=now)
    # 01:45 UTC is 09:45 in Shanghai
    assert said(card, "expires") == "Expires at 2025-03-01 09:45 CST"
    assert card == render(op, now=T0)  # nothing on it depends on when it was drawn


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
    assert card["header"]["title"]["content"] == "待确认订单"
    grid = fields(card)
    assert grid["交易场所"] == "sim" and grid["数量"] == "0.010" and grid["只减仓"] == "否"
    short = op.confirm_digest[:SHORT_DIGEST]
    assert said(card, "audit") == f"操作 {op.id} · 摘要 {short} · sim-venue r1"
    assert said(card, "expires") == "2025-03-01 09:45 CST 过期"
    assert "SIMULATED" not in plain
    assert {b["element_id"]: b["text"]["content"] for b in buttons(card)} == {
        "confirm": "确认",
        "reject": "拒绝",
        "reject_no_reason": "直接拒绝（不填原因）",
    }
    assert card["header"]["text_tag_list"][0]["text"]["content"] == "模拟"


@pytest.mark.parametrize("lang", LANGS)
async def test_every_localized_text_has_every_locale(
    store: Store, clock: FixedClock, lang: Lang
) -> None:
    requester = Source("dev-agent", f"req-i18n-{lang}", "ou_carol")
    card = render(await finance_op(store, source=requester), lang=lang)
    localized = [node for node in nodes(card) if "i18n_content" in node]
    assert len(localized) >= 12
    for node in localized:
        assert set(node["i18n_content"]) == {"en_us", "zh_cn"}, node
        assert all(value.strip() for value in node["i18n_content"].values()), node
        lark_locale = {"en": "en_us", "zh": "zh_cn"}[lang]
        assert node["content"] == node["i18n_content"][lark_locale], node
    # labels in en_us are English and in zh_cn are Chinese
    labels = fields(card, "en_us"), fields(card, "zh_cn")
    assert len(labels[0]) == len(labels[1]) >= 10
    for en_label, zh_label in zip(*labels, strict=True):
        assert not CJK.search(en_label) and CJK.search(zh_label), (en_label, zh_label)


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
    assert card["header"]["subtitle"] == {"tag": "plain_text", "content": INJECTION}
    assert fields(card)["Venue"] == INJECTION
    for markdown in markdown_texts(card):
        assert not any(marker in markdown for marker in INJECTION_MARKERS), markdown


# -- closed states -------------------------------------------------------------------------


CLOSED: list[Any] = [
    pytest.param(
        confirmed,
        State.CLAIMED,
        ("wathet", "Confirmed — executing", "已确认 — 执行中"),
        "Confirmed by <at id=ou_alice></at> at 2025-03-01 09:31 CST",
        "由 <at id=ou_alice></at> 于 2025-03-01 09:31 CST 确认",
        id="claimed",
    ),
    pytest.param(
        rejected,
        State.REJECTED,
        ("red", "Rejected by ou_bob", "已被 ou_bob 拒绝"),
        "Rejected by <at id=ou_bob></at> at 2025-03-01 09:32 CST",
        "由 <at id=ou_bob></at> 于 2025-03-01 09:32 CST 拒绝",
        id="rejected",
    ),
    pytest.param(
        cancelled,
        State.CANCELLED,
        ("grey", "Cancelled by the proposer — nothing executed", "发起方已取消 — 未执行"),
        "Cancelled by the proposer",
        "发起方已取消",
        id="cancelled",
    ),
    pytest.param(
        expired,
        State.EXPIRED,
        ("grey", "Expired — nothing executed", "已过期 — 未执行"),
        "Expired at 2025-03-01 09:45 CST: propose again if still needed",
        "已于 2025-03-01 09:45 CST 过期：如仍需要请重新提交",
        id="expired",
    ),
    pytest.param(
        superseded,
        State.SUPERSEDED,
        ("grey", "Replaced by a newer draft — nothing sent", "已被更新的草稿取代 — 未发送"),
        "Superseded by a newer draft",
        "已被更新的草稿取代",
        id="superseded",
    ),
]


@pytest.mark.parametrize(("drive", "state", "header", "status_en", "status_zh"), CLOSED)
async def test_a_closed_card_has_no_buttons_and_says_what_happened(
    store: Store,
    clock: FixedClock,
    drive: Drive,
    state: State,
    header: tuple[str, str, str],
    status_en: str,
    status_zh: str,
) -> None:
    op = await finance_op(store)
    open_card = render(op)
    assert open_card["header"]["template"] == "orange" and len(buttons(open_card)) == 3
    assert said(open_card, "expires") is not None

    closed = await drive(store, clock, op)
    assert closed.state is state
    template, headline_en, headline_zh = header
    expectations: tuple[tuple[Lang, str, str], ...] = (
        ("en", status_en, headline_en),
        ("zh", status_zh, headline_zh),
    )
    for lang, expected, headline in expectations:
        card = render(closed, lang=lang, now=clock.at)
        assert buttons(card) == []
        assert not any("behaviors" in node for node in nodes(card))
        assert card["header"]["template"] == template
        assert card["header"]["title"]["content"] == headline
        assert card["header"]["title"]["i18n_content"] == {
            "en_us": headline_en,
            "zh_cn": headline_zh,
        }
        assert said(card, "expires") is None  # decided: the expiry no longer matters
        line = status(card)
        assert line is not None
        # an operator is mentioned (markdown); a line naming no one is plain text
        assert line["tag"] == ("markdown" if "<at" in status_en else "div")
        assert said(card, "status") == expected
        assert said(card, "status", "en_us") == status_en
        assert said(card, "status", "zh_cn") == status_zh
        # the terms are still there to read, below what happened
        assert "0.010" in (fields(card).get("Quantity"), fields(card).get("数量"))


async def test_people_with_a_display_name_are_named_not_mentioned(
    store: Store, clock: FixedClock
) -> None:
    op = await rejected(store, clock, await finance_op(store))
    card = render_card(operation_view(op), now=clock.at, tz=SHANGHAI, people={"ou_bob": "Bob"})
    assert card["header"]["title"]["content"] == "Rejected by Bob"
    line = status(card)
    assert line is not None and line["tag"] == "div"
    assert said(card, "status") == "Rejected by Bob at 2025-03-01 09:32 CST"
    assert "<at" not in json.dumps(card)


async def test_a_decision_names_the_operator_who_made_it(store: Store, clock: FixedClock) -> None:
    op = await confirmed(store, clock, await finance_op(store))
    assert op.decided_by == "ou_alice" and op.decided_at == T0 + timedelta(minutes=1)
    view = operation_view(op)
    assert view.decision is not None
    decision = view.decision.model_dump(mode="json")
    assert {k: decision[k] for k in ("action", "by", "at", "reason")} == {
        "action": "confirm",
        "by": "ou_alice",
        "at": "2025-03-01T01:31:00Z",
        "reason": None,
    }
    line = status(render_card(view, now=clock.at, tz=SHANGHAI))
    assert line is not None and "<at id=ou_alice></at>" in line["content"]
