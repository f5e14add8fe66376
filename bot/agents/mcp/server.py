"""The MCP server's tools and resources, each one call of the Python client (bot/agents/client.py).

One server acts for one proposer: the token is the server's (from the environment or the
config, given when it starts), never a tool argument, so an agent can neither act as
another proposer nor read another's operations. There is no confirm tool: a confirmation
is a verified person's click on the Lark card (or a signed-in operator on the web), which
is the point; the instructions say so. A refusal is a tool error whose structured content
is the API's `{code, message, fields}`, so an agent can fix its call; so is a call whose
arguments do not fit a tool's schema (bot/agents/mcp/arguments.py). A wait answers a few
lines (bot/agents/mcp/results.py `Waited`); get_operation answers the full view.

The kinds come from the registry (`workers.domains`, through bot/agents/kinds.py): the tools' kind
enum when the server is built, the kind resources (schema, examples) when they are read; no
kind is spelled here, so a domain registered before the server starts is served like a
built-in one.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from bot.agents import kinds
from bot.agents.client import ApiError, Client
from bot.agents.mcp.arguments import ArgumentCheckingServer
from bot.agents.mcp.results import Proposed, Waited, proposed, waited
from bot.agents.mcp.watch import Follower, operation_uri
from bot.api.intake import MAX_REASON_CHARS, RequestId
from bot.api.wire import MAX_WAIT_S, CheckView, OperationPage
from bot.config import Settings
from store import OperationView
from workers.domains import DOMAINS

NAME = "countersign"
RESOURCE = operation_uri("{id}")
KINDS_RESOURCE = "countersign://kinds"
KIND_RESOURCE = "countersign://kinds/{kind}"
EXAMPLES_RESOURCE = "countersign://kinds/{kind}/examples"
API_SCHEMA_VERSION = 1  # the API's default, left out of a proposal (its request id stays)
INSTRUCTIONS = """\
countersign puts an operation you propose (an order, a message to a counterparty, a call to a
service: each is a kind) in front of people: it posts a card with the exact terms to the
audience's Lark group, and an authorized operator confirms or rejects it there. Only then does
countersign run it, once. You act as one proposer; you cannot confirm, and this server has no
tool that could: approval is a verified person's click, out of your reach by design.

Typical use: check_operation (nothing is filed; fix what it names), then propose_operation,
then wait_for_operation until "decided" or "final" (repeat while it says the time ran out);
a wait answers in a few lines, get_operation with the full view.
A rejection carries the operator's reason when they gave one. Every operation says its world:
simulated (the built-in simulated venue) and emulator (a local copy of a venue's API) move
nothing real (simulated: true); testnet is a venue's test network; live is real money. Retrying propose_operation with the same
arguments returns the same operation (request_id defaults to one made from the content).
Errors carry {code, message, fields: [{field, reason, fix}]}.
"""
KINDS_NOTE = """
The kinds here: {kinds}. The resource countersign://kinds/{{kind}} has a kind's payload
schema, and countersign://kinds/{{kind}}/examples payloads that file as shown.
"""


def _registered_kinds(schema: dict[str, Any]) -> None:
    """The kind argument's schema names the kinds registered when the tools are built (a
    callable, so a domain registered after this module was imported is listed)."""
    names = kinds.names()
    schema["enum"] = names
    schema["description"] = f"the operation kind: {', '.join(names)}"


Kind = Annotated[str, Field(json_schema_extra=_registered_kinds)]
Payload = Annotated[
    dict[str, Any],
    Field(
        description="the kind's terms, as the resource countersign://kinds/{kind} describes "
        'them; decimal numbers as strings, e.g. "0.010"'
    ),
]
AudienceName = Annotated[str, Field(description="the configured audience whose group decides")]
ExpiresIn = Annotated[
    int | None, Field(description="seconds until the card expires (the audience's default)")
]
RequestIdArg = Annotated[
    RequestId | None,
    Field(description="idempotency key; default: made from the other arguments"),
]
Reason = Annotated[
    str | None,
    Field(max_length=MAX_REASON_CHARS, description="why, in one line, shown on the card"),
]
OperationId = Annotated[str, Field(pattern=r"^[0-9A-Za-z_-]{1,64}$", description="operation id")]


def _proposal(
    kind: str,
    payload: dict[str, Any],
    audience: str,
    expires_in_s: int | None,
    request_id: str | None,
    reason: str | None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": kind, "payload": payload, "audience": audience}
    if expires_in_s is not None:
        body["expires_in_s"] = expires_in_s
    if reason is not None:
        body["source"] = {"reason": reason}
    if request_id is not None:
        body["request_id"] = request_id
    plugin = DOMAINS.get(kind)
    if plugin is not None and plugin.versions[-1] != API_SCHEMA_VERSION:
        body["schema_version"] = plugin.versions[-1]  # the schema the kind resource shows
    return body


def _result(found: BaseModel) -> CallToolResult:
    data = found.model_dump(mode="json", exclude_unset=True)
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
    )


def _refused(error: ApiError) -> CallToolResult:
    data = error.as_json()
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
        is_error=True,
    )


async def _answer(call: Awaitable[BaseModel]) -> CallToolResult:
    try:
        return _result(await call)
    except ApiError as error:
        return _refused(error)


def build_server(
    client: Client, follower: Follower | None = None, settings: Settings | None = None
) -> MCPServer:
    """The server over `client` (which holds the proposer's token); with `follower`, the
    operations it files or reads are followed and their changes published on its bus. A
    kind's schema is shaped by its table in `settings` (None: the domains' defaults)."""
    names = kinds.names()
    server = ArgumentCheckingServer(
        NAME,
        instructions=INSTRUCTIONS + KINDS_NOTE.format(kinds=", ".join(names)),
        log_level="WARNING",
        subscriptions=follower.bus if follower is not None else False,
    )

    def follow(operation_id: str) -> None:
        if follower is not None:
            follower.follow(operation_id)

    @server.tool(description="File an operation for an operator to confirm on a Lark card.")
    async def propose_operation(
        kind: Kind,
        payload: Payload,
        audience: AudienceName,
        expires_in_s: ExpiresIn = None,
        request_id: RequestIdArg = None,
        reason: Reason = None,
    ) -> Annotated[CallToolResult, Proposed]:
        body = _proposal(kind, payload, audience, expires_in_s, request_id, reason)
        try:
            filed = await client.propose(body)
        except ApiError as error:
            return _refused(error)
        follow(filed.operation.id)
        return _result(
            proposed(filed.operation, filed.created, filed.supersedes, filed.supersedes_note)
        )

    @server.tool(
        description="Check a proposal without filing it: every check the filing runs, and the "
        "kind's own pre-check as of now (a venue's, for an order); says what would be refused "
        "and why."
    )
    async def check_operation(
        kind: Kind,
        payload: Payload,
        audience: AudienceName,
        expires_in_s: ExpiresIn = None,
        request_id: RequestIdArg = None,
        reason: Reason = None,
    ) -> Annotated[CallToolResult, CheckView]:
        body = _proposal(kind, payload, audience, expires_in_s, request_id, reason)
        return await _answer(client.check(body))

    @server.tool(description="One of your operations: state, decision, outcome.")
    async def get_operation(id: OperationId) -> Annotated[CallToolResult, OperationView]:
        follow(id)
        return await _answer(client.get(id))

    @server.tool(
        description="Wait (at most timeout_s, 60 at most) until your operation is decided or "
        "final, then say where it stands in a few lines (state, decision, outcome); if the "
        "time runs out it says where it stands then. get_operation returns the full view."
    )
    async def wait_for_operation(
        id: OperationId,
        timeout_s: Annotated[
            int, Field(ge=0, le=MAX_WAIT_S, description=f"seconds to wait, 0 to {MAX_WAIT_S}")
        ] = MAX_WAIT_S,
        until: Literal["decided", "final"] = "final",
    ) -> Annotated[CallToolResult, Waited]:
        try:
            found = await client.get(id, wait_s=timeout_s, until=until)
        except ApiError as error:
            return _refused(error)
        return _result(waited(found))

    @server.tool(description="Your operations, newest first, a page at a time.")
    async def list_operations(
        state: Annotated[str | None, Field(description="only this state")] = None,
        limit: Annotated[int | None, Field(ge=1, le=100)] = None,
        cursor: Annotated[str | None, Field(description="next_cursor of a page")] = None,
    ) -> Annotated[CallToolResult, OperationPage]:
        return await _answer(client.list(state=state, limit=limit, cursor=cursor))

    @server.tool(description="Cancel your operation while nobody has confirmed it.")
    async def cancel_operation(id: OperationId) -> Annotated[CallToolResult, OperationView]:
        return await _answer(client.cancel(id))

    @server.resource(
        RESOURCE,
        name="operation",
        description="One of your operations, as the API shows it",
        mime_type="application/json",
    )
    async def operation(id: str) -> dict[str, Any]:
        try:
            found = await client.get(id)
        except ApiError as error:
            raise ResourceError(f"{error.code}: {error.message}") from None
        follow(id)
        return found.model_dump(mode="json", exclude_unset=True)

    @server.resource(
        KINDS_RESOURCE,
        name="kinds",
        description="The operation kinds this countersign takes, one line each",
        mime_type="application/json",
    )
    def kind_list() -> list[dict[str, Any]]:
        return [kinds.summary(kinds.plugin_of(name), settings) for name in kinds.names()]

    @server.resource(
        KIND_RESOURCE,
        name="kind",
        description="An operation kind: its payload as a JSON schema, and its examples",
        mime_type="application/json",
    )
    def kind(kind: str) -> dict[str, Any]:
        try:
            return kinds.described(kinds.plugin_of(kind), settings)
        except kinds.UnknownKind as unknown:
            raise ResourceError(str(unknown)) from None

    @server.resource(
        EXAMPLES_RESOURCE,
        name="kind examples",
        description="Payloads of an operation kind that file as shown",
        mime_type="application/json",
    )
    def kind_examples(kind: str) -> dict[str, Any]:
        try:
            return {"kind": kind, "examples": kinds.examples(kinds.plugin_of(kind))}
        except kinds.UnknownKind as unknown:
            raise ResourceError(str(unknown)) from None

    return server
