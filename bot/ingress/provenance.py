"""Is this card click really from an operator, on the original card, for these terms? Pure.

The click is parsed from the card.action.trigger envelope; each check sees the click, the
stored operation and the context, and returns a refusal reason or None. Order follows
DESIGN §4; the callback value's shape and action are checked before the operation is
loaded because the value is what names the operation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from store.authority import CLOSED_STATE_REASONS, Click
from store.lifecycle import State
from store.reasons import Reason
from store.records import Operation

VALUE_KEYS = frozenset({"op", "action", "digest", "v"})
OPERATION_ID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
DIGEST = re.compile(r"^[0-9a-f]{64}$")
ACTIONS = frozenset({"confirm", "reject"})


@dataclass(frozen=True)
class CardClick:
    event_id: str
    app_id: str
    tenant_key: str
    operator_open_id: str
    operator_tenant_key: str
    chat_id: str
    message_id: str
    value: Any

    @property
    def operation_id(self) -> str:
        return str(self.value.get("op", "")) if isinstance(self.value, dict) else ""

    @property
    def action(self) -> str:
        return str(self.value.get("action", "")) if isinstance(self.value, dict) else ""

    @property
    def digest(self) -> str:
        return str(self.value.get("digest", "")) if isinstance(self.value, dict) else ""

    def as_store_click(self) -> Click:
        return Click(
            operation_id=self.operation_id[:64] or "-",
            action=self.action[:32] or "-",
            digest=self.digest[:128] or "-",
            operator_open_id=self.operator_open_id or "-",
            chat_id=self.chat_id or None,
            message_id=self.message_id or None,
            event_id=self.event_id or None,
        )


@dataclass(frozen=True)
class Context:
    app_id: str
    tenant_keys: frozenset[str]
    now: datetime


def _text(node: Any, *path: str) -> str:
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, str) else ""


def parse_click(envelope: dict[str, Any]) -> CardClick:
    """Read the fields that matter; anything missing becomes "" and fails a check below."""
    return CardClick(
        event_id=_text(envelope, "header", "event_id"),
        app_id=_text(envelope, "header", "app_id"),
        tenant_key=_text(envelope, "header", "tenant_key"),
        operator_open_id=_text(envelope, "event", "operator", "open_id"),
        operator_tenant_key=_text(envelope, "event", "operator", "tenant_key"),
        chat_id=_text(envelope, "event", "context", "open_chat_id"),
        message_id=_text(envelope, "event", "context", "open_message_id"),
        value=(envelope.get("event") or {}).get("action", {}).get("value")
        if isinstance(envelope.get("event"), dict)
        and isinstance(envelope["event"].get("action"), dict)
        else None,
    )


ClickCheck = Callable[[CardClick, Context], Reason | None]
OperationCheck = Callable[[CardClick, Operation | None, Context], Reason | None]


def app_matches(click: CardClick, ctx: Context) -> Reason | None:
    return None if click.app_id == ctx.app_id else Reason.APP_MISMATCH


def tenant_allowed(click: CardClick, ctx: Context) -> Reason | None:
    # Both the installation's tenant and the clicking user's: in a chat shared with another
    # organization, an outsider's click arrives under our tenant_key with their own.
    if click.tenant_key in ctx.tenant_keys and click.operator_tenant_key in ctx.tenant_keys:
        return None
    return Reason.TENANT_NOT_ALLOWED


def value_well_formed(click: CardClick, _ctx: Context) -> Reason | None:
    value = click.value
    if (
        not isinstance(value, dict)
        or set(value) != VALUE_KEYS
        or not isinstance(value["op"], str)
        or not OPERATION_ID.fullmatch(value["op"])
        or not isinstance(value["action"], str)
        or not isinstance(value["digest"], str)
        or not DIGEST.fullmatch(value["digest"])
        or type(value["v"]) is not int
        or value["v"] != 1
        or not click.event_id
        or not click.operator_open_id
    ):
        return Reason.MALFORMED_VALUE
    return None


def action_known(click: CardClick, _ctx: Context) -> Reason | None:
    return None if click.action in ACTIONS else Reason.ACTION_UNKNOWN


# Checked before the replay cache: they need nothing stored and say who may be answered.
ENVELOPE_CHECKS: Sequence[ClickCheck] = (app_matches, tenant_allowed)
VALUE_CHECKS: Sequence[ClickCheck] = (value_well_formed, action_known)


def operation_exists(_c: CardClick, op: Operation | None, _ctx: Context) -> Reason | None:
    return None if op is not None else Reason.OPERATION_UNKNOWN


def digest_current(click: CardClick, op: Operation | None, _ctx: Context) -> Reason | None:
    assert op is not None
    return None if click.digest == op.confirm_digest else Reason.DIGEST_MISMATCH


def chat_is_audience(click: CardClick, op: Operation | None, _ctx: Context) -> Reason | None:
    assert op is not None
    return None if click.chat_id == op.envelope.audience.chat_id else Reason.CHAT_MISMATCH


def message_is_original(click: CardClick, op: Operation | None, _ctx: Context) -> Reason | None:
    assert op is not None
    return (
        None
        if op.card_message_id and click.message_id == op.card_message_id
        else Reason.MESSAGE_MISMATCH
    )


def operator_allowed(click: CardClick, op: Operation | None, _ctx: Context) -> Reason | None:
    assert op is not None
    return (
        None
        if click.operator_open_id in op.envelope.audience.operators
        else Reason.OPERATOR_NOT_ALLOWED
    )


def not_self_approval(click: CardClick, op: Operation | None, _ctx: Context) -> Reason | None:
    assert op is not None
    requester = op.envelope.source.requester_open_id
    if (
        requester
        and requester == click.operator_open_id
        and not op.envelope.audience.allow_self_approval
    ):
        return Reason.SELF_APPROVAL
    return None


def not_expired(_c: CardClick, op: Operation | None, ctx: Context) -> Reason | None:
    assert op is not None
    if op.state is State.EXPIRED or (
        op.state in (State.PREPARED, State.AWAITING_CONFIRMATION)
        and op.envelope.expires_at <= ctx.now
    ):
        return Reason.EXPIRED
    return None


def state_allows(_c: CardClick, op: Operation | None, _ctx: Context) -> Reason | None:
    assert op is not None
    return None if op.state is State.AWAITING_CONFIRMATION else CLOSED_STATE_REASONS[op.state]


OPERATION_CHECKS: Sequence[OperationCheck] = (
    operation_exists,
    digest_current,
    chat_is_audience,
    message_is_original,
    operator_allowed,
    not_self_approval,
    not_expired,
    state_allows,
)


def first_refusal(checks: Sequence[ClickCheck], click: CardClick, ctx: Context) -> Reason | None:
    return next((reason for check in checks if (reason := check(click, ctx)) is not None), None)


def verify_operation(click: CardClick, op: Operation | None, ctx: Context) -> Reason | None:
    return next(
        (reason for check in OPERATION_CHECKS if (reason := check(click, op, ctx)) is not None),
        None,
    )
