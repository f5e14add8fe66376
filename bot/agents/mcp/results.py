"""What the MCP tools answer, beyond the API's own shapes (bot/api/wire.py). Pure."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from bot.api.wire import Wire
from cards.render import SHORT_DIGEST
from store import ApprovalView, CardDelivery, OperationView, State, World


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
    next_step: str


def proposed(view: OperationView, created: bool) -> Proposed:
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
        next_step=(
            f"an operator decides on the Lark card; call wait_for_operation with id {view.id} "
            "(until decided or final) to learn the decision and the outcome"
        ),
    )
