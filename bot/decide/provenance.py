"""Is this click really from someone who may decide, on the original card or their signed-in
page, for these terms? Pure.

Each check sees the click, the stored operation and the context, and returns a refusal
reason or None. Order as in docs/architecture.md §4; the click's own values (shape, action)
are checked before the operation is loaded because the value is what names the operation.
A card click is read from Lark's envelope by the card entry (bot/ingress/decision.py
`parse_click`); a web post is the same `CardClick` with no chat and no message (`web_click`),
checked by the card's operation checks less the two that ask where the card was.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from bot.decide.bounds import STORED_ID_CHARS, storable
from bot.decide.delegated_rights import lapsed, rights_held
from bot.decide.reject_reason import cleaned_reason, reason_problem
from cards.render import REASON_MAX_CHARS, WITHOUT_REASON
from kernel.reasons import Reason
from store import (
    CLOSED_STATE_REASONS,
    Click,
    Delegation,
    Entry,
    Operation,
    State,
    refusal_reason,
    stored_key,
)

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
    evidence: str = ""  # SHA-256 of the click or post as the inbox keeps it (`payload_digest`)

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
            evidence=self.evidence or None,
        )


@dataclass(frozen=True)
class Context:
    app_id: str
    tenant_keys: frozenset[str]
    now: datetime
    # audience -> its approval policy's digest now (None: not compared: no config at hand)
    policies: Mapping[str, str] | None = None
    # the deciding person's delegations in the operation's audience, in force or not (read
    # only to name a refusal, or to offer the web page's buttons)
    delegations: Sequence[Delegation] = ()


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


def operator_allowed(click: CardClick, op: Operation | None, ctx: Context) -> Reason | None:
    """Any operator of the audience may reject; only the approvers may confirm (a rule may
    name fewer than the audience's operators); a delegate, with a right held of one of
    them."""
    assert op is not None
    audience = op.envelope.audience
    person = click.operator_open_id
    held = rights_held(click.operator_open_id, op, ctx.delegations, ctx.now)
    if person not in audience.operators and not held & set(audience.operators):
        return (
            Reason.DELEGATION_ENDED
            if lapsed(click.operator_open_id, op, ctx.delegations, ctx.now)
            else Reason.OPERATOR_NOT_ALLOWED
        )
    approvers = op.envelope.approval.approvers_of(audience)
    if click.action == "confirm" and person not in approvers and not held & set(approvers):
        return (
            Reason.DELEGATION_ENDED
            if lapsed(click.operator_open_id, op, ctx.delegations, ctx.now)
            else Reason.NOT_AN_APPROVER
        )
    return None


def not_self_approval(click: CardClick, op: Operation | None, _ctx: Context) -> Reason | None:
    """The requester decides only where the audience allows it, and never counts toward a
    quorum."""
    assert op is not None
    requester = op.envelope.source.requester_open_id
    if not requester or requester != click.operator_open_id:
        return None
    if requester not in op.envelope.audience.operators:  # a delegate: never on their own
        return Reason.SELF_APPROVAL
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


def not_confirmed_before(click: CardClick, op: Operation | None, ctx: Context) -> Reason | None:
    """One person counts once toward a quorum, and one right: theirs, or one they hold."""
    assert op is not None
    person = click.operator_open_id
    if click.action != "confirm":
        return None
    if person in op.confirmed_by:
        return Reason.ALREADY_CONFIRMED
    used = set(op.confirmed_by) | {right.on_behalf_of for right in op.delegated.values()}
    approvers = op.envelope.approval.approvers_of(op.envelope.audience)
    if person in approvers:
        return Reason.RIGHT_USED if person in used else None
    held = rights_held(click.operator_open_id, op, ctx.delegations, ctx.now) & set(approvers)
    return Reason.RIGHT_USED if held and held <= used else None


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


# A web post has no card: its signed-in session stands in for the card's chat and message.
WEB_OPERATION_CHECKS: Sequence[OperationCheck] = tuple(
    check for check in OPERATION_CHECKS if check not in (chat_is_audience, message_is_original)
)
OPERATION_CHECKS_OF: Mapping[Entry, Sequence[OperationCheck]] = {
    Entry.LARK: OPERATION_CHECKS,
    Entry.WEB: WEB_OPERATION_CHECKS,
}


def operation_refusal(
    click: CardClick, op: Operation | None, ctx: Context, entry: Entry
) -> Reason | None:
    """Why `entry` may not decide this (None: it may, as far as the operation now says)."""
    return next(
        (
            reason
            for check in OPERATION_CHECKS_OF[entry]
            if (reason := check(click, op, ctx)) is not None
        ),
        None,
    )


def why_refused(click: CardClick, op: Operation | None, ctx: Context, entry: Entry) -> Reason:
    """The database refused it: the checks name why, on the operation as it is now (a race
    they cannot see, decided or expired since, is read off the state)."""
    stored = stored_click(click, entry)
    return operation_refusal(click, op, ctx, entry) or refusal_reason(op, stored, ctx.now)


def stored_click(click: CardClick, entry: Entry) -> Click:
    """The click as the store keeps it, with where it was made (a web one has no chat or
    message)."""
    stored = click.as_store_click()
    if entry is Entry.LARK:
        return stored
    return replace(stored, chat_id=None, message_id=None, entry=entry.value)


def web_click(
    operation_id: str,
    action: str,
    digest: str,
    *,
    open_id: str,
    tenant_key: str,
    form_key: str,
    reason: str | None = None,
) -> CardClick:
    """A web form post as the card path reads a click: no chat, no message."""
    return CardClick(
        event_id=form_key,
        app_id="",
        tenant_key=tenant_key,
        operator_open_id=open_id,
        operator_tenant_key=tenant_key,
        chat_id="",
        message_id="",
        value={"op": operation_id, "action": action, "digest": digest, "v": 1},
        form_value={"reason": reason} if action == "reject" and reason is not None else None,
    )


def may_decide(op: Operation, open_id: str, tenant_key: str, ctx: Context) -> dict[str, bool]:
    """Which buttons the web page offers this person (the POST is checked again regardless)."""
    return {
        action: operation_refusal(
            web_click(
                op.id,
                action,
                op.confirm_digest,
                open_id=open_id,
                tenant_key=tenant_key,
                form_key="-",
            ),
            op,
            ctx,
            Entry.WEB,
        )
        is None
        for action in ("confirm", "reject")
    }
