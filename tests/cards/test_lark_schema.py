"""Every card the bot renders, in every state and language, passes the checks Lark applies.

The checker is the sandbox's own (`larksandbox.cardcheck`, pure functions): the JSON 2.0
schema (known tags and properties, element_id rules, at most 200 elements, button texts, no
1.0-only modules), the people an <at> may name, and the 30 KB limit measured on the request
body as the bot sends it. Cards come from `render_card` over projections of real operations
(made and moved through the store) or built by the domains themselves, as in the other tests
of this package.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.lark.api import _compact
from cards.render import EXECUTING, REASON_MAX_CHARS, render_card
from cards.strings import LANGS, Lang
from larksandbox import ELEMENT_LIMIT, cardcheck, element_count
from store import Approval, Audience, Operation, Source, Store, operation_view
from tests.support.cards import (
    SHANGHAI,
    STATUS_LINES,
    T0,
    FixedClock,
    cancelled,
    confirmed,
    counted,
    expired,
    finance_op,
    message_op,
    message_view,
    rejected,
    superseded,
)
from tests.support.projection import data_of, view_of
from workers.domains.message.baseline import (
    BaselineReading,
    Contract,
    CounterpartyBaseline,
    Fact,
    gate,
)
from workers.domains.message.schema import MAX_MENTIONS
from workers.domains.message.settings import MAX_TEXT_CHARS_CEILING

UUID = "cs-" + "x" * 47  # the longest uuid the bot sends (bot/lark/api.py UUID_MAX_LEN)
STATUSES = sorted({*STATUS_LINES, "sent"})
DETAILS: list[dict[str, Any]] = [
    {},
    {"reason": "price 60000.25 is off the 0.5 tick"},
    {"filled_qty": "0.010", "avg_price": "60000", "fees": None},
    {
        "filled_qty": "0.010",
        "avg_price": "60000",
        "fees": "0.3",
        "protective": [
            {"role": "stop_loss", "trigger_price": "57000", "status": "cancelled", "reason": "oco"},
            {"role": "take_profit", "trigger_price": "65000", "status": "filled", "reason": None},
        ],
    },
    {"message_id": "om_sent"},
]
# message texts at the cap (4000 characters, MessageSettings.max_text_chars): the widest on
# the wire are those whose every character costs four bytes in the request body
TEXTS = {
    "short": "Hello Acme, delivery on Friday.",
    "injection": "**bold** <at id=all></at> [x](http://evil)",
    "latin_4000": "".join(f"Delivery update, line {n:04d}. " for n in range(200))[:4000],
    "cjk_4000": ("周五交货，请确认收货地址。" * 400)[:4000],
    "quotes_4000": '"' * 4000,
    "backslashes_4000": "\\" * 4000,
    "emoji_4000": "\U0001f69a" * 4000,
    "lines_4000": "\n" * 3999 + "x",
}


def request_body(card: dict[str, Any]) -> bytes:
    """The create request as the bot sends it: the SDK's body over httpx, whose JSON is
    compact and not ASCII-escaped (bot/lark/transport.py); a patch body is smaller."""
    body = {"receive_id": "oc_ops", "msg_type": "interactive", "content": _compact(card)}
    body["uuid"] = UUID
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def lark_refusal(card: dict[str, Any], known: set[str]) -> cardcheck.CardProblem | None:
    return (
        cardcheck.body_size_problem(len(request_body(card)), "interactive")
        or cardcheck.check_card(card)
        or cardcheck.unknown_mention(card, known)
    )


def assert_lark_accepts(view: dict[str, Any], *, now: datetime = T0) -> None:
    # only the audience's operators are ever <at>-mentioned (verified at setup)
    known = set(view["audience"]["operators"])
    for lang in LANGS:
        card = render_card(view_of(view), lang=lang, now=now, tz=SHANGHAI)
        problem = lark_refusal(card, known)
        assert problem is None, f"{view['kind']} {view['state']} {lang}: {problem}"
        assert cardcheck.is_v2(card) and element_count(card) <= ELEMENT_LIMIT


def variants(view: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The same operation with its card delivery failed, and prepared (card not yet sent)."""
    yield view
    failed = json.loads(json.dumps(view))
    failed["card"] = {**failed["card"], "delivery": "failed", "error": "230099: refused"}
    yield failed
    if view["state"] == "awaiting_confirmation":
        yield {**view, "state": "prepared"}


def with_outcomes(view: dict[str, Any], *outcomes: dict[str, Any]) -> dict[str, Any]:
    return {
        **view,
        "state": "outcome_observed",
        "execution": {"state": "reconciled" if len(outcomes) > 1 else "completed"},
        "outcomes": list(outcomes),
        "outcome": outcomes[-1],
    }


def outcome(status: str, stage: str = "initial", detail: dict[str, Any] | None = None) -> Any:
    return {
        "stage": stage,
        "status": status,
        "detail": detail or {},
        "outcome_digest": f"{stage}-{status}",
        "reconciles_digest": "initial-unknown" if stage == "reconciled" else None,
    }


def every_execution(claimed: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A claimed operation while it runs, then with each outcome, original and reconciled."""
    for state in sorted(EXECUTING):
        yield {**claimed, "execution": {"state": state}}
    for status in STATUSES:
        for detail in DETAILS:
            yield with_outcomes(claimed, outcome(status, detail=detail))
            yield with_outcomes(claimed, outcome("unknown"), outcome(status, "reconciled", detail))
    # progress on one stage: resting, then filled
    yield with_outcomes(claimed, outcome("resting"), outcome("filled", detail=DETAILS[3]))


CLOSE = (confirmed, rejected, cancelled, expired, superseded)


@pytest.fixture
def clock(store: Store) -> FixedClock:
    fixed = FixedClock(T0)
    store.clock = fixed
    return fixed


async def every_state(store: Store, clock: FixedClock, make: Any) -> Iterator[dict[str, Any]]:
    """The open card, each way it closes, and each way a confirmed one runs and concludes."""
    views: list[dict[str, Any]] = []
    for close in CLOSE:  # one operation each, so that expiring one expires no other
        op: Operation = await make()
        views.append(data_of(operation_view(op)))
        closed = await close(store, clock, op)
        views.append(data_of(operation_view(closed)))
        if closed.state.value == "claimed":
            views += list(every_execution(data_of(operation_view(closed))))
    return iter([each for view in views for each in variants(view)])


@pytest.mark.parametrize("simulated", [True, False])
@pytest.mark.parametrize("requester", [None, "ou_alice", "ou_stranger"])
async def test_every_order_card_passes_larks_checks(
    store: Store, clock: FixedClock, simulated: bool, requester: str | None
) -> None:
    async def make() -> Operation:
        source = Source("dev-agent", f"req-{clock.at.timestamp()}-{id(object())}", requester)
        return await finance_op(store, source=source, simulated=simulated)

    checked = 0
    for view in await every_state(store, clock, make):
        assert_lark_accepts(view, now=clock.at)
        checked += 1
    assert checked > 100


TRIO = Audience("ops", "oc_ops", ("ou_alice", "ou_bob", "ou_carol"))
POLICIES = {
    "two-of-three above an amount": Approval(
        required=2, rule="large", threshold="50,000 USDC", notional="62000.00 USDC"
    ),
    "two-of-three, notional unknown": Approval(
        required=2, rule="large", threshold="50,000 USDC", notional="unknown USDC"
    ),
    "three by kind": Approval(required=3, rule="all-hands"),
    "only bob above an amount": Approval(
        approvers=("ou_bob",), rule="huge", threshold="250,000 USDC", notional="300000.00 USDC"
    ),
}


@pytest.mark.parametrize("policy", sorted(POLICIES))
async def test_every_card_under_an_approval_policy_passes_larks_checks(
    store: Store, clock: FixedClock, policy: str
) -> None:
    async def make() -> Operation:
        return await finance_op(store, audience=TRIO, approval=POLICIES[policy])

    views = list(await every_state(store, clock, make))
    if POLICIES[policy].required > 1:  # and part way: some confirmed, waiting for more
        views.append(data_of(operation_view(await counted(store, clock, await make()))))
    for view in views:
        assert_lark_accepts(view, now=clock.at)
    assert any(view["approval"]["confirmed_by"] for view in views)


@pytest.mark.parametrize("text", sorted(TEXTS))
async def test_every_message_draft_card_passes_larks_checks(
    store: Store, clock: FixedClock, text: str
) -> None:
    async def make() -> Operation:
        return await message_op(store, TEXTS[text])

    for view in await every_state(store, clock, make):
        assert_lark_accepts(view, now=clock.at)


# the widest texts at the highest cap a deployment may set (MessageSettings.max_text_chars),
# with as many mentions as a draft may list (MAX_MENTIONS), as Lark's open ids are: "ou_" and
# 32 hex digits
MOST_MENTIONS = [f"ou_{n:032x}" for n in range(MAX_MENTIONS)]
WIDEST = [each * MAX_TEXT_CHARS_CEILING for each in ('"', "\\", "\U0001f69a", "周")]


# the longest baseline term the gate writes: an override of a contract with the longest
# evidence, and as many of the longest facts as it shows, in the costliest character
_COSTLY = '"'
WIDEST_STAMP = gate(
    BaselineReading(
        "acme-supplier",
        CounterpartyBaseline(
            contract=Contract(status="signed", evidence=_COSTLY * 500, at=datetime(2026, 11, 2)),
            facts=[Fact(at=datetime(2026, 11, day), text=_COSTLY * 500) for day in range(1, 9)],
        ),
    ),
    forced=True,
).stamp


# each state a draft's card shows, and the button that put it there (None: no decision)
CLOSED_BY = (
    ("awaiting_confirmation", None),
    ("rejected", "reject"),
    ("changes_requested", "request_changes"),
    ("cancelled", None),
    ("superseded", None),
)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("text", range(len(WIDEST)))
def test_message_drafts_with_mentions_and_requesters_pass(lang: Lang, text: int) -> None:
    """Built by the message domain itself (as tests/cards/test_message_card.py does), up to
    the configurable maximum text length and with as many mentions as a draft may list."""
    for requester in (None, "ou_alice", "ou_stranger"):
        for mentions in (None, ["ou_carol", "ou_dave"], MOST_MENTIONS):
            for state, action in CLOSED_BY:
                view = message_view(
                    WIDEST[text], mentions=mentions, requester=requester, baseline=WIDEST_STAMP
                )
                view["state"] = state
                if action is not None:  # the longest note an operator can write
                    view["decision"] = {
                        "action": action,
                        "by": "ou_bob",
                        "at": view["updated_at"],
                        "reason": "周" * REASON_MAX_CHARS,
                    }
                card = render_card(
                    view_of(view), lang=lang, now=datetime(2025, 3, 1, 1, 30, tzinfo=UTC)
                )
                assert lark_refusal(card, {"ou_alice", "ou_bob"}) is None


def test_the_checker_would_notice_a_refusal() -> None:
    """The checks above can fail: a card the bot might once have rendered is refused."""
    view = message_view()
    card = render_card(view_of(view), now=T0)
    card["body"]["elements"].append({"tag": "note", "elements": []})
    problem = lark_refusal(card, {"ou_alice"})
    assert problem is not None and problem.sub_code == 200861
