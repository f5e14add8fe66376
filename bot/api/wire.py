"""What the proposers' HTTP API answers, as pydantic models: the one typed shape shared by the
API's own tests, the Python client (bot/agents/client.py) and the MCP server's tool schemas
(bot/agents/mcp/).

The API builds its answers from the projection (store/reads/projection.py); these models read them.
They keep fields they do not know (a newer server's), and the API's tests check that every
answer leaves none unknown, so the models cannot drift from what the API sends. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from store import World

# one long poll of the API at most (`?wait=`); the client and the CLI ask again for longer
MAX_WAIT_S = 60


class Wire(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class Executor(Wire):
    name: str
    revision: str


class AudienceView(Wire):
    name: str
    chat_id: str
    operators: list[str]
    allow_self_approval: bool


class ConversationView(Wire):
    chat_id: str
    message_id: str


class CallbackView(Wire):
    url: str
    secret_ref: str


class SourceView(Wire):
    proposer: str
    request_id: str
    requester_open_id: str | None
    context: dict[str, Any]
    reason: str | None = None
    conversation: ConversationView | None = None
    callback: CallbackView | None = None


class ApprovalView(Wire):
    required: int = Field(description="distinct operators who must confirm")
    approvers: list[str] = Field(description="open ids who may confirm")
    rule: str | None
    threshold: str | None
    notional: str | None
    why: str | None
    confirmed_by: list[str]


class DecisionView(Wire):
    action: str = Field(description="confirm or reject")
    by: str | None = Field(description="the deciding operator's open id")
    at: str | None
    reason: str | None = Field(description="a reject's reason, in the operator's words")
    entry: str = Field(description="where it was decided: lark (the card) or web")


class CardView(Wire):
    message_id: str | None
    shows_version: int | None
    delivery: str = Field(description="current, pending or failed")
    error: str | None


class ExecutionView(Wire):
    state: str


class OutcomeView(Wire):
    stage: str
    status: str = Field(description="e.g. filled, declined, unknown, sent")
    detail: dict[str, Any]
    outcome_digest: str
    reconciles_digest: str | None
    observed_at: str | None = Field(default=None, description="when it was observed")
    final: bool = Field(
        description="nothing more happens by itself (false: still working, e.g. resting)"
    )
    tone: str = Field(description="how it reads: good, working, warn, bad or done")
    words: dict[str, str] = Field(description="what the status says: {en, zh}")


class OperationView(Wire):
    """An operation as the API shows it (GET /api/v1/operations/{id})."""

    projection_version: int
    id: str
    kind: str
    schema_version: int
    state: str = Field(description="awaiting_confirmation, claimed, outcome_observed, ...")
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
    people: dict[str, str] = Field(default_factory=dict, description="open id -> name")


class OperationPage(Wire):
    """GET /api/v1/operations: the proposer's own operations, newest first."""

    items: list[OperationView]
    next_cursor: str | None
    has_more: bool


class FieldProblemView(Wire):
    field: str = Field(description="where in the request, e.g. payload.quantity")
    reason: str
    fix: str


class ErrorView(Wire):
    """Every refusal's body is {"error": ErrorView}."""

    code: str
    message: str
    fields: list[FieldProblemView] = Field(default_factory=list)


class CheckView(Wire):
    """POST /api/v1/operations/check: the proposal would be filed; nothing was."""

    admissible: bool
    kind: str
    audience: str
    request_id: str
    title: str | None = Field(description="the card's title")
    terms: dict[str, Any] = Field(description="what the operator would see on the card")
    simulated: bool
    world: World | None = Field(default=None, description="as OperationView.world")
    expires_in_s: int
    approval: dict[str, Any] = Field(description="how many must confirm, and why")
    replays: str | None = Field(
        description="the operation this request_id already filed (proposing again returns it)"
    )
