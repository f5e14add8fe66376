"""Cards from real operations: made and moved through the store, read back node by node.

Operations are rendered at a fixed instant (T0) in Asia/Shanghai (UTC+8); a FixedClock moves
the store's time when an operation is decided, cancelled or left to expire.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from bot.api.intake import with_additions
from store import Claimed, Click, Counted, Decided, Operation, Store
from tests.support.factories import MESSAGE_PAYLOAD, ORDER_PAYLOAD, message_draft_fields, offered
from workers.domains import DOMAINS, meaning
from workers.domains.finance.schema import FinanceOrderV1
from workers.domains.message.schema import MessageSendV1

SHANGHAI = ZoneInfo("Asia/Shanghai")
T0 = datetime(2025, 3, 1, 1, 30, tzinfo=UTC)  # 09:30 in Shanghai
OPERATORS = ["ou_alice", "ou_bob"]


class FixedClock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at

    def shift(self, **delta: float) -> None:
        self.at += timedelta(**delta)


async def finance_op(store: Store, **overrides: Any) -> Operation:
    # as filed: through the registered domain, its words and labels with it
    projection = DOMAINS["finance.order"].project(FinanceOrderV1.model_validate(ORDER_PAYLOAD))
    return await offered(store, projection=projection, **overrides)


async def message_op(store: Store, message_text: str = MESSAGE_PAYLOAD["text"]) -> Operation:
    # as read back from the store: the card must hold even for a text intake would refuse now
    return await offered(store, **message_draft_fields(message_text))


# -- reading a card ------------------------------------------------------------------------


def nodes(node: Any) -> Iterator[dict[str, Any]]:
    """Every object in the card, depth first."""
    if isinstance(node, dict):
        yield node
        for child in node.values():
            yield from nodes(child)
    elif isinstance(node, list):
        for child in node:
            yield from nodes(child)


def tagged(card: dict[str, Any], tag: str) -> list[dict[str, Any]]:
    return [node for node in nodes(card) if node.get("tag") == tag]


def plain_texts(card: dict[str, Any]) -> list[str]:
    return [node["content"] for node in tagged(card, "plain_text")]


def fields(card: dict[str, Any], locale: str | None = None) -> dict[str, str]:
    """The card's terms as label -> value: each label is a notation-size text followed by
    its value (`locale`: "zh_cn" to read that locale's words, else the content)."""

    def words(node: dict[str, Any]) -> str:
        return str(node.get("i18n_content", {}).get(locale, node["content"]))

    found: dict[str, str] = {}
    label: str | None = None
    for node in tagged(card, "plain_text"):
        if node.get("text_size") == "notation":
            label = words(node)
        elif label is not None:
            found[label] = words(node)
            label = None
    return found


def element(card: dict[str, Any], element_id: str) -> dict[str, Any] | None:
    return next((n for n in nodes(card) if n.get("element_id") == element_id), None)


def said(card: dict[str, Any], element_id: str, locale: str | None = None) -> str | None:
    """The words of the element with this id (a div's text or a markdown), or None."""
    found = element(card, element_id)
    if found is None:
        return None
    node = found.get("text", found)
    return str(node.get("i18n_content", {}).get(locale, node["content"]))


def markdown_texts(card: dict[str, Any]) -> list[str]:
    """Everything Lark would interpret as markdown, in any locale."""
    found: list[str] = []
    for node in tagged(card, "markdown"):
        found.append(node["content"])
        found.extend(node.get("i18n_content", {}).values())
    return found


# -- closing an operation ------------------------------------------------------------------


Drive = Callable[[Store, FixedClock, Operation], Awaitable[Operation]]


def click(op: Operation, action: str, operator: str) -> Click:
    return Click(op.id, action, op.confirm_digest, operator, "oc_ops", op.card_message_id, "ev")


async def confirmed(store: Store, clock: FixedClock, op: Operation) -> Operation:
    """Confirmed by as many approvers as its policy needs, in order: claimed."""
    clock.shift(minutes=1)
    for operator in op.envelope.approval.approvers_of(op.envelope.audience):
        result = await store.confirm_and_claim(click(op, "confirm", operator))
        if isinstance(result, Claimed):
            return result.operation
        assert isinstance(result, Counted), result
    raise AssertionError(f"{op.id} was never claimed")


async def counted(store: Store, clock: FixedClock, op: Operation) -> Operation:
    """One confirmation of several needed: still awaiting, with its progress."""
    clock.shift(seconds=30)
    first = op.envelope.approval.approvers_of(op.envelope.audience)[0]
    result = await store.confirm_and_claim(click(op, "confirm", first))
    assert isinstance(result, Counted), result
    return result.operation


async def rejected(store: Store, clock: FixedClock, op: Operation) -> Operation:
    clock.shift(minutes=2)
    result = await store.reject(click(op, "reject", "ou_bob"))
    assert isinstance(result, Decided)
    return result.operation


async def cancelled(store: Store, clock: FixedClock, op: Operation) -> Operation:
    clock.shift(minutes=3)
    return await store.cancel(op.id, "proposer:dev-agent")


async def expired(store: Store, clock: FixedClock, op: Operation) -> Operation:
    clock.shift(minutes=15)
    assert await store.expire_due() == [op.id]
    found = await store.get(op.id)
    assert found is not None
    return found


async def superseded(store: Store, clock: FixedClock, op: Operation) -> Operation:
    clock.shift(minutes=4)
    return await store.supersede(op.id, "proposer:dev-agent")


# -- the message draft ----------------------------------------------------------------------


def message_view(
    text: str = MESSAGE_PAYLOAD["text"],
    *,
    mentions: list[str] | None = None,
    requester: str | None = None,
    state: str = "awaiting_confirmation",
    baseline: str | None = None,
) -> dict[str, Any]:
    """The projection of a message draft, as the store would hand it to the card (with the
    baseline gate's `baseline` term, if given)."""
    payload: dict[str, Any] = {**MESSAGE_PAYLOAD, "text": text}
    if mentions is not None:
        payload["mentions"] = mentions
    # the renderer must hold even for a text the schema would refuse today (stored earlier)
    model = MessageSendV1.model_construct(**{"reply_to": None, "mentions": None, **payload})
    return {
        "id": "op_1",
        "kind": "message.send",
        "state": state,
        "confirm_digest": "d" * 64,
        "updated_at": "2025-03-01T01:30:00Z",
        "expires_at": "2025-03-01T01:45:00Z",
        "simulated": False,
        "executor": {"name": "lark-message", "revision": "1"},
        "audience": {"name": "ops", "chat_id": "oc_ops", "operators": OPERATORS},
        "terms": with_additions(
            DOMAINS["message.send"].project(model),
            {"terms": [{"name": "baseline", "value": baseline}] if baseline else []},
        ),
        "source": {"proposer": "dev-agent", "request_id": "r1", "requester_open_id": requester},
        "decision": None,
        "outcomes": [],
    }


def outcome_of(
    status: str, kind: str = "finance.order", stage: str = "initial", **detail: Any
) -> dict[str, Any]:
    """An outcome as the projection shows it, with what `status` says for `kind` (as the
    executor stores it with the row)."""
    said = meaning(kind, status)
    return {
        "stage": stage,
        "status": status,
        "detail": detail,
        "final": said.final,
        "tone": said.tone.value,
        "words": said.words.as_json(),
    }


# Every status the executor can report, with its en and zh line and header colour.
STATUS_LINES = {
    "accepted": ("Accepted by the venue", "交易所已接受", "green"),
    "resting": ("Resting on the book", "挂单中", "green"),
    "partially_filled": ("Partially filled", "部分成交", "green"),
    "filled": ("Filled", "已成交", "green"),
    "rejected": ("Rejected by the venue", "交易所已拒绝", "red"),
    "cancelled": ("Cancelled at the venue", "交易所已撤单", "grey"),
    "preflight_rejected": ("Refused by pre-check — nothing sent", "预检未通过 — 未发送", "red"),
    "reservation_refused": (
        "Over the exposure budget — nothing sent",
        "超出敞口预算 — 未发送",
        "red",
    ),
    "unknown": ("Submission unknown — reconciling", "提交结果未知 — 正在核对", "yellow"),
    "not_submitted": (
        "Not executed — it was never received",
        "未执行 — 对方从未收到",
        "grey",
    ),
    "unresolved": ("Unresolved — a person must check it", "无法自动核对 — 需要人工确认", "red"),
}
