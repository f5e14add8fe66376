"""What the MCP tools answer, beyond the API's own shapes (bot/api/wire.py). Pure.

A wait answers a few lines (`Waited`), not the whole operation (`OperationView`, some 3 KB
that an agent would read on every poll): what it is, where it stands, who decided and what
came of it. get_operation has the rest.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from bot.api.wire import Wire
from cards.outcomes import outcome_parts, outcome_title
from cards.render import SHORT_DIGEST
from cards.strings import Lang
from cards.vocabulary import headline, person, shortened, title_of
from store import ApprovalView, CardDelivery, ClickAction, OperationView, State, World, reached

# the agent reads English; the outcome's line is bounded (its details quote other people)
LANG: Lang = "en"
OUTCOME_LINE_CHARS = 300


class Proposed(Wire):
    """A filed proposal as the agent needs it: what the operator will see, and what next."""

    operation_id: str
    created: bool = Field(description="false: this request_id had filed it before; the same one")
    state: State
    title: str | None = Field(description="the card's title")
    terms: dict[str, Any] = Field(description="the exact terms on the card")
    digest_prefix: str = Field(description="the confirm digest's start, printed on the card")
    approval: ApprovalView = Field(description="how many operators must confirm, and who")
    simulated: bool = Field(
        description="true: nothing of it leaves this machine (world simulated or emulator)"
    )
    world: World | None = Field(
        default=None,
        description="which world it acts in: simulated, emulator, testnet or live (real "
        "money); null: not a venue (a message, a service call)",
    )
    expires_at: str
    card: CardDelivery = Field(description="the card's delivery: pending, current or failed")
    supersedes: list[str] = Field(
        default_factory=list,
        description="ids of the open operations this one superseded (a new message draft to "
        "the same destination replaces the open one, on any topic); [] when none",
    )
    supersedes_note: str | None = Field(
        default=None, description="what superseding them did, in a sentence; null when none"
    )
    next_step: str


def proposed(
    view: OperationView,
    created: bool,
    supersedes: list[str] | None = None,
    supersedes_note: str | None = None,
) -> Proposed:
    return Proposed(
        operation_id=view.id,
        created=created,
        state=view.state,
        title=view.terms.get("title"),
        terms=view.terms,
        digest_prefix=view.confirm_digest[:SHORT_DIGEST],
        approval=view.approval,
        simulated=view.simulated,
        world=view.world,
        expires_at=view.expires_at,
        card=view.card.delivery,
        supersedes=supersedes or [],
        supersedes_note=supersedes_note,
        next_step=(
            f"an operator decides on the Lark card; call wait_for_operation with id {view.id} "
            "(until decided or final) to learn the decision and the outcome"
        ),
    )


class DecisionBrief(Wire):
    action: ClickAction = Field(description="confirm, reject or request_changes")
    by: str | None = Field(description="the deciding operator's open id")
    by_name: str | None = Field(description="their configured name (null: none configured)")
    at: str | None
    reason: str | None = Field(description="a reject's reason or a request's note, in their words")


class OutcomeBrief(Wire):
    status: str = Field(description="e.g. filled, declined, unknown, sent")
    line: str = Field(description="what it says, and its details, in a line")
    final: bool = Field(description="nothing more happens by itself")


class Waited(Wire):
    """An operation as a wait answers it: a few lines; get_operation has the full view."""

    id: str
    state: State
    title: str = Field(description="what it is, in a line")
    headline: str = Field(description="where it stands, in words")
    decided: bool = Field(description="no operator decision is pending any more")
    final: bool = Field(description="nothing more will happen by itself")
    decision: DecisionBrief | None
    outcome: OutcomeBrief | None = Field(description="the newest outcome")
    simulated: bool = Field(description="true: nothing of it leaves this machine")
    world: World | None
    expires_at: str
    next_step: str


def _decision(view: OperationView) -> DecisionBrief | None:
    decision = view.decision
    if decision is None:
        return None
    name = person(decision.by, view.people)
    return DecisionBrief(
        action=decision.action,
        by=decision.by,
        by_name=name if name != decision.by and name != "?" else None,
        at=decision.at,
        reason=decision.reason,
    )


def _outcome(view: OperationView) -> OutcomeBrief | None:
    outcome = view.outcome
    if outcome is None:
        return None
    said = outcome_title(outcome, view.world, LANG)
    details = "; ".join(outcome_parts(outcome.detail, LANG))
    line = f"{said}: {details}" if details else said
    return OutcomeBrief(
        status=outcome.status, line=shortened(line, OUTCOME_LINE_CHARS), final=outcome.final
    )


def waited(view: OperationView) -> Waited:
    final = reached(view, "final")
    then = (
        "final: nothing more will happen by itself"
        if final
        else f"call wait_for_operation with id {view.id} again to keep waiting"
    )
    return Waited(
        id=view.id,
        state=view.state,
        title=title_of(view, LANG),
        headline=headline(view, view.people).words(LANG),
        decided=reached(view, "decided"),
        final=final,
        decision=_decision(view),
        outcome=_outcome(view),
        simulated=view.simulated,
        world=view.world,
        expires_at=view.expires_at,
        next_step=f"{then}; get_operation with id {view.id} returns the full view "
        "(terms, approval, source, every outcome with its detail)",
    )
