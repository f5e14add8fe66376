"""What the proposers' HTTP API answers, as pydantic models: the one typed shape shared by the
API's own tests, the Python client (bot/agents/client.py) and the MCP server's tool schemas
(bot/agents/mcp/).

An operation is the store's own projection (`OperationView`, store/reads/projection.py), answered
as JSON; the models here are the API's other answers. They keep fields they do not know (a
newer server's), and the API's tests check that every answer leaves none unknown, so the
models cannot drift from what the API sends. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from store import OperationView, World

# one long poll of the API at most (`?wait=`); the client and the CLI ask again for longer
MAX_WAIT_S = 60


class Wire(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class ProposedView(OperationView):
    """POST /api/v1/operations: the operation, and the open drafts its filing superseded
    (a message draft: one open draft per destination)."""

    supersedes: list[str] = Field(
        default_factory=list,
        description="ids of the open operations this one superseded when it was filed "
        "(a new draft to the same destination replaces the open one); [] when none",
    )
    supersedes_note: str | None = Field(
        default=None, description="what superseding them did, in a sentence; null when none"
    )


def supersession_note(operation_id: str, target: str, superseded: list[str]) -> str | None:
    """The sentence a proposal's answer says about the drafts it superseded (None: none)."""
    if not superseded:
        return None
    which = (
        f"the open draft {superseded[0]}"
        if len(superseded) == 1
        else f"the open drafts {', '.join(superseded)}"
    )
    cards = "Its card now says" if len(superseded) == 1 else "Their cards now say"
    return (
        f"{operation_id} superseded {which} to the same target ({target}): only one "
        f'draft per destination is open at a time. {cards} "Superseded by a newer draft", and a '
        "click on them is refused; operators decide on the new card."
    )


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
