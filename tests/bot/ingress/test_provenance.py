"""Provenance: one test per pure check, then the pipeline's order when several fail.

Operations are real (made and moved through the store); clicks are card.action.trigger
envelopes shaped like Lark's (larksandbox/events.py `card_action`), read by `parse_click`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest
from ulid import ULID

from bot.decide.provenance import (
    ENVELOPE_CHECKS,
    OPERATION_CHECKS,
    VALUE_CHECKS,
    CardClick,
    Context,
    action_known,
    app_matches,
    chat_is_audience,
    digest_current,
    first_refusal,
    message_is_original,
    not_expired,
    not_self_approval,
    operation_exists,
    operator_allowed,
    state_allows,
    tenant_allowed,
    value_well_formed,
    verify_operation,
)
from bot.ingress.decision import parse_click
from cards.render import callback_value
from kernel.reasons import Reason
from store import (
    Approval,
    Audience,
    Claimed,
    Click,
    Counted,
    Decided,
    Delegation,
    Operation,
    Source,
    State,
    Store,
    operation_view,
    payload_digest,
)
from tests.support.clicks import APP_ID, OUR_TENANT, T0, card_action
from tests.support.factories import draft, offered

OUTSIDER_TENANT = "tenant_outsider"
ONE_US = timedelta(microseconds=1)


class FixedClock:
    """The store's clock, moved only by the test."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at

    def shift(self, **delta: float) -> None:
        self.at += timedelta(**delta)


def pipeline(click: CardClick, op: Operation | None, ctx: Context) -> Reason | None:
    """What the callback consumer runs, minus the I/O between the stages (replay, load)."""
    for checks in (ENVELOPE_CHECKS, VALUE_CHECKS):
        if (reason := first_refusal(checks, click, ctx)) is not None:
            return reason
    return verify_operation(click, op, ctx)


@dataclass(frozen=True)
class Scenario:
    """A click on `op`'s own card by an authorized operator, unless a field says otherwise."""

    op: Operation
    found: bool = True  # False: the store had no operation by the clicked id
    operation_id: str | None = None  # None: the op's id
    action: str = "confirm"
    digest: str | None = None  # None: the op's current confirm digest
    value_changes: Mapping[str, Any] = field(default_factory=dict)
    event_id: str = "ev_1"
    app_id: str = APP_ID
    tenant_key: str = OUR_TENANT
    operator: str = "ou_alice"
    operator_tenant: str = OUR_TENANT
    chat_id: str = "oc_ops"
    message_id: str | None = None  # None: the op's recorded card message id
    now: datetime = T0
    policies: Mapping[str, str] | None = None  # audience -> its policy digest now
    note: str | None = None  # what the card form's input sent with the click
    delegations: tuple[Delegation, ...] = ()  # the clicker's, in the operation's audience

    def value(self) -> dict[str, Any]:
        value = callback_value(operation_view(self.op), self.action)
        if self.operation_id is not None:
            value["op"] = self.operation_id
        if self.digest is not None:
            value["digest"] = self.digest
        return {**value, **self.value_changes}

    def envelope(self) -> dict[str, Any]:
        message_id = self.message_id
        if message_id is None:
            message_id = self.op.card_message_id or ""
        return card_action(
            self.value(),
            event_id=self.event_id,
            app_id=self.app_id,
            tenant_key=self.tenant_key,
            operator=self.operator,
            operator_tenant=self.operator_tenant,
            chat_id=self.chat_id,
            message_id=message_id,
            form_value=None if self.note is None else {"reason": self.note},
        )

    def click(self) -> CardClick:
        return parse_click(self.envelope())

    def ctx(self) -> Context:
        return Context(APP_ID, frozenset({OUR_TENANT}), self.now, self.policies, self.delegations)

    def loaded(self) -> Operation | None:
        return self.op if self.found else None

    def verdict(self) -> Reason | None:
        return pipeline(self.click(), self.loaded(), self.ctx())


def ctx_at(now: datetime = T0) -> Context:
    return Context(APP_ID, frozenset({OUR_TENANT}), now)


def store_click(
    op: Operation, action: str, operator: str = "ou_alice", note: str | None = None
) -> Click:
    return Click(
        op.id,
        action,
        op.confirm_digest,
        operator,
        "oc_ops",
        op.card_message_id,
        f"ev-{action}",
        reason=note,
    )


@pytest.fixture
def clock(store: Store) -> FixedClock:
    fixed = FixedClock(T0)
    store.clock = fixed
    return fixed


@pytest.fixture
async def op(store: Store, clock: FixedClock) -> Operation:
    return await offered(store)


async def requested_by(store: Store, requester: str | None, **overrides: Any) -> Operation:
    request_id = f"self-{ULID()}"
    return await offered(store, source=Source("dev-agent", request_id, requester), **overrides)


# -- parsing -------------------------------------------------------------------------------


def test_parse_click_reads_every_field_from_a_lark_envelope() -> None:
    value = {"op": "01JNB0000000000000000000AB", "action": "confirm", "digest": "a" * 64, "v": 1}
    envelope = card_action(
        value, event_id="ev_9", operator="ou_bob", message_id="om_9", chat_id="oc_9"
    )
    click = parse_click(envelope)
    assert click == CardClick(
        event_id="ev_9",
        app_id=APP_ID,
        tenant_key=OUR_TENANT,
        operator_open_id="ou_bob",
        operator_tenant_key=OUR_TENANT,
        chat_id="oc_9",
        message_id="om_9",
        value=value,
        evidence=payload_digest(envelope),  # the envelope as the inbox keeps it
    )
    assert (click.operation_id, click.action, click.digest) == (value["op"], "confirm", "a" * 64)


@pytest.mark.parametrize(
    "envelope",
    [
        pytest.param({}, id="empty"),
        pytest.param({"header": "x", "event": "y"}, id="not objects"),
        pytest.param({"header": {"app_id": 7}, "event": {"action": "confirm"}}, id="wrong types"),
        pytest.param({"event": {"action": {"tag": "button"}}}, id="no value"),
    ],
)
def test_parse_click_turns_missing_parts_into_blanks_that_fail_the_checks(
    envelope: dict[str, Any],
) -> None:
    click = parse_click(envelope)
    assert click.value is None
    assert click.app_id == click.event_id == click.operator_open_id == click.chat_id == ""
    assert (click.operation_id, click.action, click.digest) == ("", "", "")
    assert app_matches(click, ctx_at()) is Reason.APP_MISMATCH
    assert value_well_formed(click, ctx_at()) is Reason.MALFORMED_VALUE


def test_checks_run_in_design_order() -> None:
    # docs/architecture.md §4: the value's shape and action checked before the operation is
    # loaded (the value names it), self-approval after operator membership.
    names = [check.__name__ for check in (*ENVELOPE_CHECKS, *VALUE_CHECKS, *OPERATION_CHECKS)]
    assert names == [
        "envelope_well_formed",
        "app_matches",
        "tenant_allowed",
        "value_well_formed",
        "action_known",
        "reason_well_formed",
        "note_given",
        "operation_exists",
        "digest_current",
        "action_offered",
        "policy_current",
        "chat_is_audience",
        "message_is_original",
        "operator_allowed",
        "not_self_approval",
        "not_expired",
        "state_allows",
        "not_confirmed_before",
    ]


# -- envelope checks -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("app_id", "expected"),
    [
        (APP_ID, None),
        ("cli_someone_else", Reason.APP_MISMATCH),
        ("", Reason.APP_MISMATCH),
        (APP_ID.upper(), Reason.APP_MISMATCH),
    ],
)
def test_app_matches(op: Operation, app_id: str, expected: Reason | None) -> None:
    click = Scenario(op, app_id=app_id).click()
    assert app_matches(click, ctx_at()) is expected


@pytest.mark.parametrize(
    ("tenant_key", "operator_tenant", "expected"),
    [
        pytest.param(OUR_TENANT, OUR_TENANT, None, id="ours"),
        pytest.param(OUTSIDER_TENANT, OUTSIDER_TENANT, Reason.TENANT_NOT_ALLOWED, id="foreign"),
        # A chat shared with another organization: their member's click arrives under our
        # installation's tenant_key, with their own operator tenant.
        pytest.param(
            OUR_TENANT, OUTSIDER_TENANT, Reason.TENANT_NOT_ALLOWED, id="outsider-in-our-chat"
        ),
        pytest.param(OUTSIDER_TENANT, OUR_TENANT, Reason.TENANT_NOT_ALLOWED, id="foreign-header"),
        pytest.param(OUR_TENANT, "", Reason.TENANT_NOT_ALLOWED, id="no-operator-tenant"),
        pytest.param("", OUR_TENANT, Reason.TENANT_NOT_ALLOWED, id="no-header-tenant"),
    ],
)
def test_tenant_allowed(
    op: Operation, tenant_key: str, operator_tenant: str, expected: Reason | None
) -> None:
    click = Scenario(op, tenant_key=tenant_key, operator_tenant=operator_tenant).click()
    assert tenant_allowed(click, ctx_at()) is expected


def test_tenant_allowed_accepts_any_configured_tenant(op: Operation) -> None:
    ctx = Context(APP_ID, frozenset({OUR_TENANT, OUTSIDER_TENANT}), T0)
    click = Scenario(op, operator_tenant=OUTSIDER_TENANT).click()
    assert tenant_allowed(click, ctx) is None


# -- value checks --------------------------------------------------------------------------

Change = Callable[[dict[str, Any]], Any]


def _without(key: str) -> Change:
    return lambda value: {k: v for k, v in value.items() if k != key}


def _with(key: str, new: Any) -> Change:
    return lambda value: {**value, key: new}


MALFORMED: list[Any] = [
    *(pytest.param(_without(key), id=f"missing-{key}") for key in ("op", "action", "digest", "v")),
    pytest.param(_with("confirmed", True), id="extra-key"),
    pytest.param(_with("operator", "ou_alice"), id="extra-operator-key"),
    pytest.param(_with("v", "1"), id="v-str"),
    pytest.param(_with("v", True), id="v-bool-true"),
    pytest.param(_with("v", 2), id="v-2"),
    pytest.param(_with("v", 0), id="v-0"),
    pytest.param(_with("v", 1.0), id="v-float"),
    pytest.param(_with("v", None), id="v-null"),
    pytest.param(lambda v: {**v, "digest": v["digest"].upper()}, id="digest-upper-hex"),
    pytest.param(lambda v: {**v, "digest": v["digest"][:63]}, id="digest-63"),
    pytest.param(lambda v: {**v, "digest": v["digest"] + "0"}, id="digest-65"),
    pytest.param(_with("digest", "g" * 64), id="digest-not-hex"),
    pytest.param(_with("digest", ""), id="digest-empty"),
    pytest.param(_with("digest", 7), id="digest-int"),
    pytest.param(lambda v: {**v, "op": v["op"].lower()}, id="op-lowercase"),
    pytest.param(lambda v: {**v, "op": v["op"][:25]}, id="op-25"),
    pytest.param(lambda v: {**v, "op": v["op"] + "0"}, id="op-27"),
    pytest.param(lambda v: {**v, "op": v["op"][:-1] + "U"}, id="op-not-crockford"),
    pytest.param(_with("op", "../../admin"), id="op-path"),
    pytest.param(_with("op", ""), id="op-empty"),
    pytest.param(_with("op", 1), id="op-int"),
    pytest.param(_with("op", None), id="op-null"),
    pytest.param(_with("action", 1), id="action-int"),
    pytest.param(_with("action", None), id="action-null"),
    pytest.param(lambda v: [v], id="value-list"),
    pytest.param(lambda v: json.dumps(v), id="value-json-str"),
    pytest.param(lambda v: None, id="value-null"),
    pytest.param(lambda v: 1, id="value-int"),
    pytest.param(lambda v: {}, id="value-empty"),
    # `$` would also match before a trailing newline: the checks use fullmatch.
    pytest.param(lambda v: {**v, "op": v["op"] + "\n"}, id="op-trailing-newline"),
    pytest.param(lambda v: {**v, "digest": v["digest"] + "\n"}, id="digest-trailing-newline"),
]


@pytest.mark.parametrize("action", ["confirm", "reject"])
def test_value_well_formed_accepts_the_cards_own_values(op: Operation, action: str) -> None:
    assert value_well_formed(Scenario(op, action=action).click(), ctx_at()) is None


@pytest.mark.parametrize("change", MALFORMED)
def test_value_well_formed_refuses(op: Operation, change: Change) -> None:
    value = change(callback_value(operation_view(op), "confirm"))
    click = parse_click(card_action(value, message_id=f"om_{op.id}"))
    assert value_well_formed(click, ctx_at()) is Reason.MALFORMED_VALUE
    assert first_refusal(VALUE_CHECKS, click, ctx_at()) is Reason.MALFORMED_VALUE


@pytest.mark.parametrize(
    "scenario",
    [
        pytest.param({"event_id": ""}, id="missing-event-id"),
        pytest.param({"operator": ""}, id="missing-operator"),
    ],
)
def test_value_well_formed_needs_an_event_id_and_an_operator(
    op: Operation, scenario: dict[str, Any]
) -> None:
    click = dataclasses.replace(Scenario(op), **scenario).click()
    assert value_well_formed(click, ctx_at()) is Reason.MALFORMED_VALUE


def test_a_click_without_action_value_is_malformed(op: Operation) -> None:
    raw = card_action(None, message_id=f"om_{op.id}")
    del raw["event"]["action"]
    assert value_well_formed(parse_click(raw), ctx_at()) is Reason.MALFORMED_VALUE


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("confirm", None),
        ("reject", None),
        ("approve", Reason.ACTION_UNKNOWN),
        ("Confirm", Reason.ACTION_UNKNOWN),
        ("confirm ", Reason.ACTION_UNKNOWN),
        ("", Reason.ACTION_UNKNOWN),
    ],
)
def test_action_known(op: Operation, action: str, expected: Reason | None) -> None:
    click = Scenario(op, action=action).click()
    assert value_well_formed(click, ctx_at()) is None  # the shape is fine; the action is not
    assert action_known(click, ctx_at()) is expected


# -- operation checks ----------------------------------------------------------------------


def test_operation_exists(op: Operation) -> None:
    click = Scenario(op).click()
    assert operation_exists(click, op, ctx_at()) is None
    assert operation_exists(click, None, ctx_at()) is Reason.OPERATION_UNKNOWN


async def test_digest_current(store: Store, op: Operation) -> None:
    other = await offered(store)
    assert other.confirm_digest != op.confirm_digest
    for action in ("confirm", "reject"):
        assert digest_current(Scenario(op, action=action).click(), op, ctx_at()) is None
    stale = Scenario(op, digest=other.confirm_digest).click()
    assert digest_current(stale, op, ctx_at()) is Reason.DIGEST_MISMATCH
    assert digest_current(Scenario(op, digest="").click(), op, ctx_at()) is Reason.DIGEST_MISMATCH


@pytest.mark.parametrize(
    ("chat_id", "expected"),
    [("oc_ops", None), ("oc_elsewhere", Reason.CHAT_MISMATCH), ("", Reason.CHAT_MISMATCH)],
)
def test_chat_is_audience(op: Operation, chat_id: str, expected: Reason | None) -> None:
    click = Scenario(op, chat_id=chat_id).click()
    assert chat_is_audience(click, op, ctx_at()) is expected


async def test_message_is_original(store: Store, op: Operation) -> None:
    other = await offered(store)
    assert op.card_message_id == f"om_{op.id}"
    assert message_is_original(Scenario(op).click(), op, ctx_at()) is None
    for copy in ("om_forwarded", other.card_message_id, ""):
        click = Scenario(op, message_id=copy).click()
        assert message_is_original(click, op, ctx_at()) is Reason.MESSAGE_MISMATCH, copy


@pytest.mark.parametrize("message_id", ["", "om_anything", "None"])
async def test_message_is_original_refuses_when_no_card_was_recorded(
    store: Store, clock: FixedClock, message_id: str
) -> None:
    prepared = (await store.propose(draft())).operation
    assert prepared.card_message_id is None
    click = Scenario(prepared, message_id=message_id).click()
    assert message_is_original(click, prepared, ctx_at()) is Reason.MESSAGE_MISMATCH


@pytest.mark.parametrize(
    ("operator", "expected"),
    [
        ("ou_alice", None),
        ("ou_bob", None),
        ("ou_mallory", Reason.OPERATOR_NOT_ALLOWED),
        ("ou_alice2", Reason.OPERATOR_NOT_ALLOWED),
        ("", Reason.OPERATOR_NOT_ALLOWED),
    ],
)
def test_operator_allowed(op: Operation, operator: str, expected: Reason | None) -> None:
    click = Scenario(op, operator=operator).click()
    assert operator_allowed(click, op, ctx_at()) is expected


async def test_not_self_approval_refuses_the_requester(store: Store, clock: FixedClock) -> None:
    mine = await requested_by(store, "ou_alice")
    assert not mine.envelope.audience.allow_self_approval
    click = Scenario(mine, operator="ou_alice").click()
    assert not_self_approval(click, mine, ctx_at()) is Reason.SELF_APPROVAL
    reject = Scenario(mine, operator="ou_alice", action="reject").click()
    assert not_self_approval(reject, mine, ctx_at()) is Reason.SELF_APPROVAL
    other = Scenario(mine, operator="ou_bob").click()
    assert not_self_approval(other, mine, ctx_at()) is None


async def test_not_self_approval_allowed_when_the_audience_allows_it(
    store: Store, clock: FixedClock
) -> None:
    audience = Audience("ops", "oc_ops", ("ou_alice", "ou_bob"), allow_self_approval=True)
    mine = await requested_by(store, "ou_alice", audience=audience)
    click = Scenario(mine, operator="ou_alice").click()
    assert not_self_approval(click, mine, ctx_at()) is None


async def test_not_self_approval_never_counts_the_requester_toward_a_quorum(
    store: Store, clock: FixedClock
) -> None:
    """allow_self_approval covers one confirmation alone; toward two, the requester's confirm
    is refused however the audience is set, while her reject still decides."""
    audience = Audience(
        "ops", "oc_ops", ("ou_alice", "ou_bob", "ou_carol"), allow_self_approval=True
    )
    mine = await requested_by(store, "ou_alice", audience=audience, approval=Approval(required=2))
    click = Scenario(mine, operator="ou_alice").click()
    assert not_self_approval(click, mine, ctx_at()) is Reason.SELF_APPROVAL
    reject = Scenario(mine, operator="ou_alice", action="reject").click()
    assert not_self_approval(reject, mine, ctx_at()) is None
    other = Scenario(mine, operator="ou_bob").click()
    assert not_self_approval(other, mine, ctx_at()) is None


def test_not_self_approval_without_a_requester_is_fine(op: Operation) -> None:
    assert op.envelope.source.requester_open_id is None
    for operator in ("ou_alice", "ou_bob"):
        click = Scenario(op, operator=operator).click()
        assert not_self_approval(click, op, ctx_at()) is None


def test_not_expired_until_the_expiry_instant(op: Operation) -> None:
    expires_at = op.envelope.expires_at
    assert expires_at == T0 + timedelta(seconds=900)
    click = Scenario(op).click()
    assert not_expired(click, op, ctx_at(T0)) is None
    assert not_expired(click, op, ctx_at(expires_at - ONE_US)) is None
    assert not_expired(click, op, ctx_at(expires_at)) is Reason.EXPIRED  # the instant itself
    assert not_expired(click, op, ctx_at(expires_at + ONE_US)) is Reason.EXPIRED


async def test_not_expired_refuses_a_prepared_operation_past_expiry(
    store: Store, clock: FixedClock
) -> None:
    prepared = (await store.propose(draft())).operation
    assert prepared.state is State.PREPARED
    click = Scenario(prepared).click()
    assert not_expired(click, prepared, ctx_at(T0)) is None
    assert not_expired(click, prepared, ctx_at(prepared.envelope.expires_at)) is Reason.EXPIRED


async def test_not_expired_refuses_an_expired_operation_whatever_the_clock_says(
    store: Store, clock: FixedClock, op: Operation
) -> None:
    clock.shift(seconds=900)
    assert await store.expire_due() == [op.id]
    expired = await store.get(op.id)
    assert expired is not None and expired.state is State.EXPIRED
    click = Scenario(expired).click()
    # even with a clock that lags the expiry worker's, the state says expired
    assert not_expired(click, expired, ctx_at(T0)) is Reason.EXPIRED


async def test_not_expired_leaves_a_claim_alone_past_expiry(
    store: Store, clock: FixedClock, op: Operation
) -> None:
    claimed = await store.confirm_and_claim(store_click(op, "confirm"))
    assert isinstance(claimed, Claimed)
    late = ctx_at(op.envelope.expires_at + timedelta(hours=1))
    click = Scenario(claimed.operation).click()
    assert not_expired(click, claimed.operation, late) is None
    assert state_allows(click, claimed.operation, late) is Reason.ALREADY_CLAIMED


STATE_REASONS: dict[State, Reason | None] = {
    State.PREPARED: Reason.NOT_OFFERED,
    State.AWAITING_CONFIRMATION: None,
    State.CLAIMED: Reason.ALREADY_CLAIMED,
    State.OUTCOME_OBSERVED: Reason.ALREADY_CLAIMED,
    State.REJECTED: Reason.ALREADY_REJECTED,
    State.CANCELLED: Reason.CANCELLED,
    State.EXPIRED: Reason.EXPIRED,
    State.SUPERSEDED: Reason.SUPERSEDED,
    State.CHANGES_REQUESTED: Reason.CHANGES_REQUESTED,
}


def test_state_table_covers_every_state() -> None:
    assert set(STATE_REASONS) == set(State)


@pytest.mark.parametrize("state", list(State))
def test_state_allows(op: Operation, state: State) -> None:
    in_state = dataclasses.replace(op, state=state)
    assert state_allows(Scenario(in_state).click(), in_state, ctx_at()) is STATE_REASONS[state]


async def test_state_allows_reads_states_the_store_really_reaches(
    store: Store, clock: FixedClock
) -> None:
    prepared = (await store.propose(draft())).operation
    rejected = await store.reject(store_click(await offered(store), "reject", "ou_bob"))
    claimed = await store.confirm_and_claim(store_click(await offered(store), "confirm"))
    assert isinstance(rejected, Decided) and isinstance(claimed, Claimed)
    cancelled = await store.cancel((await offered(store)).id, "proposer:dev-agent")
    superseded = await store.supersede((await offered(store)).id, "proposer:dev-agent")
    for real in (prepared, rejected.operation, claimed.operation, cancelled, superseded):
        click = Scenario(real).click()
        assert state_allows(click, real, ctx_at()) is STATE_REASONS[real.state], real.state


# -- the pipeline --------------------------------------------------------------------------

Ops = Mapping[str, Operation]
Mutation = Callable[[Scenario, Ops], Scenario]


def alices_right_to_dave(revoked: bool = False) -> Delegation:
    return Delegation(
        id="01DELEGATION0000000000000",
        audience="ops",
        delegator="ou_alice",
        delegate="ou_dave",
        starts_at=T0 - timedelta(hours=1),
        ends_at=T0 + timedelta(days=1),
        created_at=T0 - timedelta(hours=1),
        created_by="admin:cli",
        revoked_at=T0 - timedelta(minutes=1) if revoked else None,
        revoked_by="admin:cli" if revoked else None,
    )


MUTATIONS: dict[str, Mutation] = {
    "delegate": lambda s, ops: dataclasses.replace(
        s, operator="ou_dave", delegations=(alices_right_to_dave(),)
    ),
    "lapsed delegate": lambda s, ops: dataclasses.replace(
        s, operator="ou_dave", delegations=(alices_right_to_dave(revoked=True),)
    ),
    "float in value": lambda s, ops: dataclasses.replace(s, value_changes={"v": 1.0}),
    "foreign app": lambda s, ops: dataclasses.replace(s, app_id="cli_other"),
    "outsider operator": lambda s, ops: dataclasses.replace(s, operator_tenant=OUTSIDER_TENANT),
    "malformed value": lambda s, ops: dataclasses.replace(s, value_changes={"v": 2}),
    "unknown action": lambda s, ops: dataclasses.replace(s, action="approve"),
    "reject": lambda s, ops: dataclasses.replace(s, action="reject"),
    "request changes": lambda s, ops: dataclasses.replace(
        s, action="request_changes", note="Say Saturday, not Friday"
    ),
    "request changes without a note": lambda s, ops: dataclasses.replace(
        s, action="request_changes", note="  \n "
    ),
    "draft": lambda s, ops: dataclasses.replace(s, op=ops["draft"]),
    "changes requested": lambda s, ops: dataclasses.replace(s, op=ops["changes_requested"]),
    "unknown operation": lambda s, ops: dataclasses.replace(
        s, found=False, operation_id=str(ULID())
    ),
    "stale digest": lambda s, ops: dataclasses.replace(s, digest=ops["other"].confirm_digest),
    "other chat": lambda s, ops: dataclasses.replace(s, chat_id="oc_elsewhere"),
    "forwarded card": lambda s, ops: dataclasses.replace(s, message_id="om_forwarded"),
    "not an operator": lambda s, ops: dataclasses.replace(s, operator="ou_mallory"),
    "own request": lambda s, ops: dataclasses.replace(
        s, op=ops["self_requested"], operator="ou_alice"
    ),
    "past expiry": lambda s, ops: dataclasses.replace(s, now=s.op.envelope.expires_at),
    "claimed": lambda s, ops: dataclasses.replace(s, op=ops["claimed"]),
    "rejected": lambda s, ops: dataclasses.replace(s, op=ops["rejected"]),
    "cancelled": lambda s, ops: dataclasses.replace(s, op=ops["cancelled"]),
    # approval policy: 2 of alice, bob and carol; only bob above an amount; alice counted
    "quorum": lambda s, ops: dataclasses.replace(s, op=ops["quorum"]),
    "policy changed": lambda s, ops: dataclasses.replace(s, policies={"ops": "policy-now"}),
    "policy unchanged": lambda s, ops: dataclasses.replace(s, policies={"ops": "policy-filed"}),
    "narrowed": lambda s, ops: dataclasses.replace(s, op=ops["narrowed"]),
    "confirmed once": lambda s, ops: dataclasses.replace(s, op=ops["confirmed_once"]),
}

TRIO = Audience("ops", "oc_ops", ("ou_alice", "ou_bob", "ou_carol"))
QUORUM = {
    "audience": TRIO,
    "approval": Approval(
        required=2,
        approvers=TRIO.operators,
        rule="large",
        threshold="50,000 USDC",
        notional="62000.00 USDC",
        policy="policy-filed",
    ),
}
NARROWED = {
    "audience": TRIO,
    "approval": Approval(
        approvers=("ou_bob",),
        rule="huge",
        threshold="250,000 USDC",
        notional="300000.00 USDC",
        policy="policy-filed",
    ),
}

FIRST_REFUSAL: list[Any] = [
    pytest.param(("float in value", "foreign app", "outsider operator"), Reason.MALFORMED_ENVELOPE),
    pytest.param(
        ("foreign app", "outsider operator", "malformed value", "stale digest"),
        Reason.APP_MISMATCH,
    ),
    pytest.param(
        ("outsider operator", "malformed value", "unknown operation"), Reason.TENANT_NOT_ALLOWED
    ),
    pytest.param(
        ("malformed value", "unknown action", "unknown operation"), Reason.MALFORMED_VALUE
    ),
    pytest.param(("unknown action", "unknown operation", "other chat"), Reason.ACTION_UNKNOWN),
    pytest.param(("unknown operation", "other chat", "not an operator"), Reason.OPERATION_UNKNOWN),
    pytest.param(("stale digest", "past expiry"), Reason.DIGEST_MISMATCH),
    pytest.param(("cancelled", "stale digest", "other chat"), Reason.DIGEST_MISMATCH),
    pytest.param(("other chat", "not an operator"), Reason.CHAT_MISMATCH),
    pytest.param(("other chat", "forwarded card", "past expiry"), Reason.CHAT_MISMATCH),
    pytest.param(("forwarded card", "not an operator"), Reason.MESSAGE_MISMATCH),
    pytest.param(("forwarded card", "own request"), Reason.MESSAGE_MISMATCH),
    pytest.param(("not an operator", "past expiry"), Reason.OPERATOR_NOT_ALLOWED),
    pytest.param(("own request", "past expiry"), Reason.SELF_APPROVAL),
    pytest.param(("own request", "reject", "other chat"), Reason.CHAT_MISMATCH),
    pytest.param(("past expiry",), Reason.EXPIRED),
    pytest.param(("reject", "past expiry"), Reason.EXPIRED),
    pytest.param(("claimed", "past expiry"), Reason.ALREADY_CLAIMED),
    pytest.param(("rejected", "reject"), Reason.ALREADY_REJECTED),
    pytest.param(("cancelled", "past expiry"), Reason.CANCELLED),
    pytest.param(("quorum", "policy changed", "other chat"), Reason.POLICY_CHANGED),
    pytest.param(("quorum", "policy changed", "reject"), None, id="stale-policy-reject"),
    pytest.param(("quorum", "policy unchanged"), None, id="valid-quorum-confirm"),
    pytest.param(("policy changed",), None, id="filed-before-policies"),
    pytest.param(("narrowed", "past expiry"), Reason.NOT_AN_APPROVER),
    pytest.param(("narrowed", "reject"), None, id="narrowed-reject"),
    pytest.param(("confirmed once", "past expiry"), Reason.EXPIRED),
    pytest.param(("confirmed once",), Reason.ALREADY_CONFIRMED),
    pytest.param(("delegate",), None, id="a-delegate-confirms"),
    pytest.param(("delegate", "reject"), None, id="a-delegate-rejects"),
    pytest.param(("lapsed delegate",), Reason.DELEGATION_ENDED),
    pytest.param(("lapsed delegate", "reject"), Reason.DELEGATION_ENDED, id="lapsed-reject"),
    pytest.param(("confirmed once", "delegate"), Reason.RIGHT_USED),
    pytest.param(("confirmed once", "reject"), None, id="veto-after-confirming"),
    pytest.param((), None, id="valid-confirm"),
    pytest.param(("reject",), None, id="valid-reject"),
    # Request changes: only on a draft whose card offers it, and only with a note
    pytest.param(("request changes", "past expiry"), Reason.ACTION_UNKNOWN, id="order-steer"),
    pytest.param(("draft", "request changes without a note", "other chat"), Reason.NOTE_REQUIRED),
    pytest.param(("draft", "request changes", "past expiry"), Reason.EXPIRED),
    pytest.param(("draft", "request changes", "not an operator"), Reason.OPERATOR_NOT_ALLOWED),
    pytest.param(("changes requested", "reject"), Reason.CHANGES_REQUESTED),
    pytest.param(("draft", "request changes"), None, id="valid-request-changes"),
    pytest.param(("draft", "reject"), None, id="valid-draft-reject"),
]

STEERABLE = {"projection": {"title": "Message to acme", "terms": [], "steer": True}}


@pytest.fixture
async def ops(store: Store, clock: FixedClock) -> Ops:
    claimed = await store.confirm_and_claim(store_click(await offered(store), "confirm"))
    rejected = await store.reject(store_click(await offered(store), "reject"))
    counted = await store.confirm_and_claim(
        store_click(await offered(store, **QUORUM), "confirm", "ou_alice")
    )
    assert isinstance(claimed, Claimed) and isinstance(rejected, Decided)
    assert isinstance(counted, Counted)
    steered = await store.reject(
        store_click(await offered(store, **STEERABLE), "request_changes", note="Fix the date")
    )
    assert isinstance(steered, Decided)
    return {
        "offered": await offered(store),
        "other": await offered(store),
        "self_requested": await requested_by(store, "ou_alice"),
        "claimed": claimed.operation,
        "rejected": rejected.operation,
        "cancelled": await store.cancel((await offered(store)).id, "proposer:dev-agent"),
        "quorum": await offered(store, **QUORUM),
        "narrowed": await offered(store, **NARROWED),
        "confirmed_once": counted.operation,
        "draft": await offered(store, **STEERABLE),
        "changes_requested": steered.operation,
    }


@pytest.mark.parametrize(("mutations", "expected"), FIRST_REFUSAL)
def test_the_pipeline_returns_the_first_failing_check(
    ops: Ops, mutations: tuple[str, ...], expected: Reason | None
) -> None:
    scenario = Scenario(ops["offered"])
    for name in mutations:
        scenario = MUTATIONS[name](scenario, ops)
    assert scenario.verdict() is expected


def test_the_first_refusal_table_reaches_every_refusal_the_checks_can_give() -> None:
    reachable = {
        Reason.MALFORMED_ENVELOPE,
        Reason.APP_MISMATCH,
        Reason.TENANT_NOT_ALLOWED,
        Reason.MALFORMED_VALUE,
        Reason.ACTION_UNKNOWN,
        Reason.OPERATION_UNKNOWN,
        Reason.DIGEST_MISMATCH,
        Reason.CHAT_MISMATCH,
        Reason.MESSAGE_MISMATCH,
        Reason.OPERATOR_NOT_ALLOWED,
        Reason.SELF_APPROVAL,
        Reason.POLICY_CHANGED,
        Reason.NOT_AN_APPROVER,
        Reason.ALREADY_CONFIRMED,
        Reason.DELEGATION_ENDED,
        Reason.RIGHT_USED,
        Reason.EXPIRED,
        Reason.ALREADY_CLAIMED,
        Reason.ALREADY_REJECTED,
        Reason.CANCELLED,
        Reason.NOTE_REQUIRED,
        Reason.CHANGES_REQUESTED,
    }
    assert {param.values[1] for param in FIRST_REFUSAL} - {None} == reachable
    # the rest come from the transport (before parsing), only from state_allows, from
    # recovery after a crash (a click nobody decided), or from the consumer's answer itself
    # (a click answered "busy" before it was on record)
    assert set(Reason) - reachable == {
        Reason.TRANSPORT_UNAUTHENTIC,
        Reason.NOT_OFFERED,
        Reason.SUPERSEDED,
        Reason.RECOVERED_UNANSWERED,
        Reason.ANSWERED_BUSY,
    }


def test_a_fully_valid_click_passes_every_stage(ops: Ops) -> None:
    scenario = Scenario(ops["offered"])
    click, ctx = scenario.click(), scenario.ctx()
    assert first_refusal(ENVELOPE_CHECKS, click, ctx) is None
    assert first_refusal(VALUE_CHECKS, click, ctx) is None
    assert verify_operation(click, ops["offered"], ctx) is None
    assert click.as_store_click() == Click(
        operation_id=ops["offered"].id,
        action="confirm",
        digest=ops["offered"].confirm_digest,
        operator_open_id="ou_alice",
        chat_id="oc_ops",
        message_id=f"om_{ops['offered'].id}",
        event_id="ev_1",
        evidence=click.evidence,
    )
    assert click.evidence == payload_digest(scenario.envelope())
