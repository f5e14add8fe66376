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
