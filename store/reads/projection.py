"""The one versioned read projection of an operation (docs/architecture.md §1, principle 6).

Cards, the HTTP API, the CLI, the dashboard and MCP all read this model (`OperationView`,
keyed by the vocabulary's enums; the API answers it as JSON), and everyone waiting on
an operation (the API's `?until=`, `countersign show --wait`, the MCP wait) asks it the same
two questions:

Decided: no operator decision is pending any more (confirmed, rejected, or closed without
one: cancelled, expired, superseded). Final: nothing more will happen by itself: closed
without running, or a newest outcome its domain declared final (stored with the outcome, so
a status nobody here knows is read as its domain said). Both are conditions on the current
view, not on a change seen, so a waiter that asks again never misses one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kernel.timeutil import iso_utc
from store.lifecycle import OPEN_UNCLAIMED, TERMINAL_UNCLAIMED
from store.vocabulary import CardDelivery, ClickAction, Entry, Execution, Stage, State, Tone, World

if TYPE_CHECKING:  # the records' modules load SQLAlchemy; a client reading views needs none
    from store.authority.records import Operation
    from store.execution.records import Outcome

PROJECTION_VERSION = 1


class Projected(BaseModel):
    # extra="allow": a client reading a newer server's answer keeps the fields it does not
    # know (the API's tests check every answer leaves none unknown); frozen: a view is read
    model_config = ConfigDict(extra="allow", frozen=True)


class Executor(Projected):
    name: str
    revision: str


class AudienceView(Projected):
    name: str
    chat_id: str
    operators: list[str]
    allow_self_approval: bool


class ConversationView(Projected):
    chat_id: str
    message_id: str


class CallbackView(Projected):
    url: str
    secret_ref: str


def _absent(value: object) -> bool:
    return value is None


class SourceView(Projected):
    proposer: str
    request_id: str
    requester_open_id: str | None
    context: dict[str, Any]
    # left out when absent, as the envelope's source leaves them out (store/authority/envelope.py)
    reason: str | None = Field(default=None, exclude_if=_absent)
    conversation: ConversationView | None = Field(default=None, exclude_if=_absent)
    callback: CallbackView | None = Field(default=None, exclude_if=_absent)


class DelegatedView(Projected):
    on_behalf_of: str = Field(description="whose approval right was used")
    until: str = Field(description="when the delegation ends (ISO-8601 UTC)")


class ConfirmerView(Projected):
    by: str = Field(description="who confirmed (open id)")
    entry: Entry = Field(description="where: lark (the card) or web")
    at: str = Field(description="when (ISO-8601 UTC)")


def _none_yet(value: list[ConfirmerView]) -> bool:
    return not value


class ApprovalView(Projected):
    required: int = Field(description="distinct operators who must confirm")
    approvers: list[str] = Field(description="open ids who may confirm")
    rule: str | None
    threshold: str | None
    notional: str | None
    why: str | None
    confirmed_by: list[str]
    delegated: dict[str, DelegatedView] = Field(
        default_factory=dict,
        description="who of confirmed_by confirmed with a delegated right: open id -> whose "
        "right and until when",
    )
    # left out until someone confirmed, so an answer before any confirmation is as it was
    confirmations: list[ConfirmerView] = Field(
        default_factory=list,
        exclude_if=_none_yet,
        description="each accepted confirmation, oldest first: who, where (lark or web), when",
    )


class DecisionView(Projected):
    action: ClickAction = Field(description="confirm or reject")
    by: str | None = Field(description="the deciding operator's open id")
    at: str | None
    reason: str | None = Field(description="a reject's reason, in the operator's words")
    entry: Entry = Field(description="where it was decided: lark (the card) or web")


class CardView(Projected):
    message_id: str | None
    shows_version: int | None
    delivery: CardDelivery = Field(description="current, pending or failed")
    error: str | None


class ExecutionView(Projected):
    state: Execution


class OutcomeView(Projected):
    stage: Stage
    status: str = Field(description="e.g. filled, declined, unknown, sent")
    detail: dict[str, Any]
    outcome_digest: str
    reconciles_digest: str | None
    observed_at: str | None = Field(default=None, description="when it was observed")
    final: bool = Field(
        description="nothing more happens by itself (false: still working, e.g. resting)"
    )
    tone: Tone = Field(description="how it reads: good, working, warn, bad or done")
    words: dict[str, str] = Field(description="what the status says: {en, zh}")


class OperationView(Projected):
    """An operation as every surface reads it; the API answers it as JSON (an operation's
    read, its list's items, a proposal's and a cancel's answer)."""

    projection_version: int
    id: str
    kind: str
    schema_version: int
    state: State = Field(description="awaiting_confirmation, claimed, outcome_observed, ...")
    version: int
    confirm_digest: str
    created_at: str
    updated_at: str
    expires_at: str
    auto_send_at: str | None = Field(
        default=None,
        description="a time-boxed draft sends itself then if nobody has decided (null: never)",
    )
    simulated: bool = Field(
        description="true: nothing of it leaves this machine (world simulated or emulator)"
    )
    world: World | None = Field(
        default=None,
        description="which world it acts in: simulated (the built-in simulated venue), "
        "emulator (a local copy of a real venue's API), testnet, live (real money); "
        "null: not a venue (a message, a service call)",
    )
    executor: Executor
    audience: AudienceView
    target: str
    terms: dict[str, Any] = Field(description="what the operator sees on the card")
    payload: dict[str, Any]
    payload_digest: str
    projection_digest: str
    source: SourceView
    approval: ApprovalView
    decision: DecisionView | None
    card: CardView
    execution: ExecutionView | None
    outcome: OutcomeView | None = Field(description="the newest outcome")
    outcomes: list[OutcomeView]
    # names are configuration, never part of what was confirmed: the store leaves this empty
    # and the API fills it (bot/api/people.py)
    people: dict[str, str] = Field(default_factory=dict, description="open id -> name")


def outcome_view(outcome: Outcome) -> OutcomeView:
    return OutcomeView(
        stage=Stage(outcome.stage),
        status=outcome.status,
        detail=outcome.detail,
        outcome_digest=outcome.outcome_digest,
        reconciles_digest=outcome.reconciles_digest,
        observed_at=iso_utc(outcome.observed_at) if outcome.observed_at else None,
        # what the status says, as its domain declared it when the row was written
        final=outcome.final,
        tone=Tone(outcome.tone),
        words=dict(outcome.words),
    )


# a decided operation's state -> the button that decided it (any other: Confirm)
DECIDED_BY_ACTION = {
    State.REJECTED: ClickAction.REJECT,
    State.CHANGES_REQUESTED: ClickAction.REQUEST_CHANGES,
}


def card_delivery(op: Operation) -> CardDelivery:
    if op.card_error:
        return CardDelivery.FAILED
    return CardDelivery.CURRENT if op.card_version == op.version else CardDelivery.PENDING


def operation_view(
    op: Operation,
    outcomes: Sequence[Outcome] = (),
    confirmers: Sequence[ConfirmerView] = (),
) -> OperationView:
    """The projection; `outcomes` (oldest first) come from the execution ledger, and
    `confirmers` (each accepted confirmation, oldest first) from the confirmations."""
    envelope = op.envelope
    approval = envelope.approval
    shown = [outcome_view(outcome) for outcome in outcomes]
    return OperationView(
        projection_version=PROJECTION_VERSION,
        id=op.id,
        kind=envelope.kind,
        schema_version=envelope.schema_version,
        state=op.state,
        version=op.version,
        confirm_digest=op.confirm_digest,
        created_at=iso_utc(op.created_at),
        updated_at=iso_utc(op.updated_at),
        expires_at=iso_utc(envelope.expires_at),
        # a time-boxed draft sends itself then if nobody has decided (None: never)
        auto_send_at=iso_utc(op.auto_send_at) if op.auto_send_at else None,
        # nothing of it leaves this machine (world simulated or emulator)
        simulated=envelope.simulated,
        # which world it acts in, marked on every surface (None: not a venue)
        world=envelope.world,
        executor=Executor(name=envelope.executor_name, revision=envelope.executor_revision),
        audience=AudienceView.model_validate(envelope.audience.as_json()),
        target=envelope.target_ref,
        terms=op.projection,
        payload=op.payload,
        payload_digest=envelope.payload_digest,
        projection_digest=envelope.projection_digest,
        source=SourceView.model_validate(envelope.source.as_json()),
        # what the approval policy asks (fixed when filed) and who has confirmed so far
        approval=ApprovalView(
            required=approval.required,
            approvers=list(approval.approvers_of(envelope.audience)),
            rule=approval.rule,
            threshold=approval.threshold,
            notional=approval.notional,
            why=approval.why,
            confirmed_by=list(op.confirmed_by),
            delegated={
                person: DelegatedView(on_behalf_of=right.on_behalf_of, until=right.until)
                for person, right in op.delegated.items()
            },
            confirmations=list(confirmers),
        ),
        decision=(
            DecisionView(
                action=DECIDED_BY_ACTION.get(op.state, ClickAction.CONFIRM),
                by=op.decided_by,
                at=iso_utc(op.decided_at) if op.decided_at else None,
                reason=op.decision_reason,
                # where the decision was made: the Lark card, or the web; a decision
                # recorded before entries were is the card's
                entry=Entry(op.decision_entry or Entry.LARK),
            )
            if op.decided_by
            else None
        ),
        card=CardView(
            message_id=op.card_message_id,
            shows_version=op.card_version,
            delivery=card_delivery(op),
            error=op.card_error,
        ),
        execution=ExecutionView(state=Execution(op.execution_state))
        if op.execution_state
        else None,
        # the newest outcome; a reconciliation never replaces the original, both are listed
        outcome=shown[-1] if shown else None,
        outcomes=shown,
    )


Until = Literal["changed", "decided", "final"]
UNTIL: tuple[Until, ...] = ("changed", "decided", "final")


def decided(view: OperationView) -> bool:
    return view.state not in OPEN_UNCLAIMED


def final(view: OperationView) -> bool:
    if view.state in TERMINAL_UNCLAIMED:
        return True
    return view.outcome is not None and view.outcome.final


def reached(view: OperationView, until: Until) -> bool:
    """Whether `view` already is what `until` waits for ("changed" never is: it needs a change)."""
    if until == "decided":
        return decided(view)
    if until == "final":
        return final(view)
    return False
