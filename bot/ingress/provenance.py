"""Is this card click really from an operator, on the original card, for these terms? Pure.

The click is parsed from the card.action.trigger envelope; each check sees the click, the
stored operation and the context, and returns a refusal reason or None. Order as in
docs/architecture.md §4; the callback value's shape and action are checked before the
operation is loaded because the value is what names the operation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.ingress.envelope_shape import STORED_ID_CHARS, envelope_problem, storable, text_at
from bot.ingress.reject_reason import cleaned_reason, reason_problem
from cards.render import REASON_MAX_CHARS, WITHOUT_REASON
from store.decisions import CLOSED_STATE_REASONS, Click
from store.inbox import stored_key
from store.lifecycle import State
from store.reasons import Reason
from store.records import Operation

VALUE_KEYS = frozenset({"op", "action", "digest", "v"})
OPERATION_ID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
DIGEST = re.compile(r"^[0-9a-f]{64}$")
ACTIONS = frozenset({"confirm", "reject", "request_changes"})
# the buttons whose form input travels with the click: a reject's reason, a request's note
WITH_NOTE = frozenset({"reject", "request_changes"})


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
    problem: str | None = None  # why the envelope cannot be taken as Lark's (None: it can)
    form_value: Any = None  # the card form's fields, when the click submitted one
    button_name: str = ""  # the clicked component's `name` (a form's buttons have one)

    @property
    def operation_id(self) -> str:
        return str(self.value.get("op", "")) if isinstance(self.value, dict) else ""

    @property
    def action(self) -> str:
        return str(self.value.get("action", "")) if isinstance(self.value, dict) else ""

    @property
    def digest(self) -> str:
        return str(self.value.get("digest", "")) if isinstance(self.value, dict) else ""

    @property
    def event_key(self) -> str:
        """The event id as stored (inbox key, confirmations): itself, or its digest if long."""
        return stored_key(self.event_id)

    def as_store_click(self) -> Click:
        """The click as the store keeps it: every field bounded to its column and storable."""
        return Click(
            operation_id=storable(self.operation_id, 64) or "-",
            action=storable(self.action, 32) or "-",
            digest=storable(self.digest, 128) or "-",
            operator_open_id=storable(self.operator_open_id, STORED_ID_CHARS) or "-",
            chat_id=storable(self.chat_id, STORED_ID_CHARS) or None,
            message_id=storable(self.message_id, STORED_ID_CHARS) or None,
            event_id=storable(self.event_key, STORED_ID_CHARS) or None,
            reason=(
                storable(cleaned_reason(self.form_value) or "", REASON_MAX_CHARS) or None
                if self.action in WITH_NOTE
                and self.button_name != WITHOUT_REASON
                and reason_problem(self.form_value) is None
                else None
            ),
        )


@dataclass(frozen=True)
class Context:
    app_id: str
    tenant_keys: frozenset[str]
    now: datetime
    # audience -> its approval policy's digest now (None: not compared; see CallbackSettings)
    policies: Mapping[str, str] | None = None


def parse_click(envelope: dict[str, Any]) -> CardClick:
    """Read the fields that matter; anything missing becomes "" and fails a check below."""
    return CardClick(
        event_id=text_at(envelope, "header", "event_id"),
        app_id=text_at(envelope, "header", "app_id"),
        tenant_key=text_at(envelope, "header", "tenant_key"),
        operator_open_id=text_at(envelope, "event", "operator", "open_id"),
        operator_tenant_key=text_at(envelope, "event", "operator", "tenant_key"),
        chat_id=text_at(envelope, "event", "context", "open_chat_id"),
        message_id=text_at(envelope, "event", "context", "open_message_id"),
        value=(envelope.get("event") or {}).get("action", {}).get("value")
        if isinstance(envelope.get("event"), dict)
        and isinstance(envelope["event"].get("action"), dict)
        else None,
        problem=envelope_problem(envelope),
        form_value=_action(envelope).get("form_value"),
        button_name=str(_action(envelope).get("name") or ""),
    )


def _action(envelope: dict[str, Any]) -> dict[str, Any]:
    event = envelope.get("event")
    action = event.get("action") if isinstance(event, dict) else None
    return action if isinstance(action, dict) else {}


ClickCheck = Callable[[CardClick, Context], Reason | None]
OperationCheck = Callable[[CardClick, Operation | None, Context], Reason | None]


def envelope_well_formed(click: CardClick, _ctx: Context) -> Reason | None:
    return None if click.problem is None else Reason.MALFORMED_ENVELOPE


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


def reason_well_formed(click: CardClick, _ctx: Context) -> Reason | None:
    """A submitted form's reason is text Lark could have sent."""
    return None if reason_problem(click.form_value) is None else Reason.MALFORMED_VALUE


def note_given(click: CardClick, _ctx: Context) -> Reason | None:
    """A request for changes says what to change: that note is all the proposer gets."""
    if click.action == "request_changes" and click.as_store_click().reason is None:
        return Reason.NOTE_REQUIRED
    return None


# Checked before the replay cache: they need nothing stored and say who may be answered.
# A click they refuse has no inbox entry, so its refusal is stored before it is answered.
ENVELOPE_CHECKS: Sequence[ClickCheck] = (envelope_well_formed, app_matches, tenant_allowed)
VALUE_CHECKS: Sequence[ClickCheck] = (
    value_well_formed,
    action_known,
    reason_well_formed,
    note_given,
)


def operation_exists(_c: CardClick, op: Operation | None, _ctx: Context) -> Reason | None:
    return None if op is not None else Reason.OPERATION_UNKNOWN


def digest_current(click: CardClick, op: Operation | None, _ctx: Context) -> Reason | None:
    assert op is not None
    return None if click.digest == op.confirm_digest else Reason.DIGEST_MISMATCH


def chat_is_audience(click: CardClick, op: Operation | None, _ctx: Context) -> Reason | None:
    """The audience's chat, or the escalation chat once the card's copy is there."""
    assert op is not None
    chats = {op.envelope.audience.chat_id}
    if op.escalation_message_id and op.envelope.approval.escalation_chat_id:
        chats.add(op.envelope.approval.escalation_chat_id)
    return None if click.chat_id in chats else Reason.CHAT_MISMATCH


def message_is_original(click: CardClick, op: Operation | None, _ctx: Context) -> Reason | None:
    """The card the bot posted in that chat: the original, or its copy in the escalation
    chat (a copy's click counts like the original's; a forwarded copy's never)."""
    assert op is not None
    escalation_chat = op.envelope.approval.escalation_chat_id
    cards = {(op.card_message_id, op.envelope.audience.chat_id)}
    if op.escalation_message_id and escalation_chat:
        cards.add((op.escalation_message_id, escalation_chat))
    return None if (click.message_id, click.chat_id) in cards else Reason.MESSAGE_MISMATCH


def action_offered(click: CardClick, op: Operation | None, _ctx: Context) -> Reason | None:
    """Request changes only where the card offers it: a draft its domain lets operators
    send back (`steer` in the projection, bound into the digest)."""
    assert op is not None
    if click.action == "request_changes" and op.projection.get("steer") is not True:
        return Reason.ACTION_UNKNOWN
    return None


def policy_current(click: CardClick, op: Operation | None, ctx: Context) -> Reason | None:
    """A confirmation is taken only under the approval policy its operation was filed with."""
    assert op is not None
    filed = op.envelope.approval.policy
    if click.action != "confirm" or not filed or ctx.policies is None:
        return None
    return None if ctx.policies.get(op.envelope.audience.name) == filed else Reason.POLICY_CHANGED


def operator_allowed(click: CardClick, op: Operation | None, _ctx: Context) -> Reason | None:
    """Any operator of the audience may reject; only the approvers may confirm (a rule may
    name fewer than the audience's operators)."""
    assert op is not None
    audience = op.envelope.audience
    if click.operator_open_id not in audience.operators:
        return Reason.OPERATOR_NOT_ALLOWED
    if (
        click.action == "confirm"
        and click.operator_open_id not in op.envelope.approval.approvers_of(audience)
    ):
        return Reason.NOT_AN_APPROVER
    return None


def not_self_approval(click: CardClick, op: Operation | None, _ctx: Context) -> Reason | None:
    """The requester decides only where the audience allows it, and never counts toward a
    quorum."""
    assert op is not None
    requester = op.envelope.source.requester_open_id
    if not requester or requester != click.operator_open_id:
        return None
    allowed = op.envelope.audience.allow_self_approval
    if click.action == "confirm" and op.envelope.approval.required > 1:
        allowed = False
    return None if allowed else Reason.SELF_APPROVAL


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


def not_confirmed_before(click: CardClick, op: Operation | None, _ctx: Context) -> Reason | None:
    """One person counts once toward a quorum."""
    assert op is not None
    if click.action == "confirm" and click.operator_open_id in op.confirmed_by:
        return Reason.ALREADY_CONFIRMED
    return None


OPERATION_CHECKS: Sequence[OperationCheck] = (
    operation_exists,
    digest_current,
    action_offered,
    policy_current,
    chat_is_audience,
    message_is_original,
    operator_allowed,
    not_self_approval,
    not_expired,
    state_allows,
    not_confirmed_before,
)


def first_refusal(checks: Sequence[ClickCheck], click: CardClick, ctx: Context) -> Reason | None:
    return next((reason for check in checks if (reason := check(click, ctx)) is not None), None)


def verify_operation(click: CardClick, op: Operation | None, ctx: Context) -> Reason | None:
    return next(
        (reason for check in OPERATION_CHECKS if (reason := check(click, op, ctx)) is not None),
        None,
    )
