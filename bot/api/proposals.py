"""Filing a proposal, and asking whether one would be filed.

POST /api/v1/operations files it (201; 200 with the same operation for a replayed
request_id). POST /api/v1/operations/check takes the same body and runs every intake and
capability check and the request_id replay check, and files nothing: 200 with what the card
would show and what the policy would ask, or the very refusal (status, code, fields) the
filing would get. An agent that plans before it acts (bot/agents/mcp/) checks first.

Both run the domain's pre-check against a fresh reading of the venue (`_vetted`): an order
the venue could never take as it stands (off the lot or tick, leverage above the maximum, a
fee currency it does not charge, a fee cap below the fee at the mark) is a 422 naming the
field, and no card is ever offered for it. Only a failed read answers 503 (retry).
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from bot.api.errors import refuse
from bot.api.intake import CapabilitiesUnavailable, Forbidden, build_draft
from bot.api.keys import (
    CAPABILITIES_KEY,
    CONFIG_KEY,
    ON_PROPOSED_KEY,
    PRECHECKS_KEY,
    PROPOSER_KEY,
    STORE_KEY,
)
from bot.api.people import answered
from bot.api.wire import supersession_note
from kernel.canonical import loads_strict
from kernel.problems import FieldProblem, ProblemsFound
from store import (
    ActiveClaim,
    Draft,
    Operation,
    OperationView,
    RequestConflict,
    Signal,
    Store,
    signal_of,
)
from store import view as op_view
from workers.domains import DOMAINS
from workers.domains.base import ReadingUnavailable

log = logging.getLogger("countersign.api")


def answer(
    request: web.Request,
    view: OperationView,
    status: int = 200,
    extra: dict[str, Any] | None = None,
) -> web.Response:
    """An operation's view as the API answers it: with the names of the people it mentions
    (and, for a proposal, `extra`: what its filing superseded)."""
    settings = request.app[CONFIG_KEY].settings
    return web.json_response({**answered(view, settings), **(extra or {})}, status=status)


def _problems(request: web.Request, error: ProblemsFound) -> web.Response:
    return refuse(
        request, 422, error.code, "the request is invalid; nothing was stored", error.problems
    )


def _conflict(
    request: web.Request, draft: Draft, error: RequestConflict | ActiveClaim
) -> web.Response:
    if isinstance(error, ActiveClaim):
        return refuse(
            request,
            409,
            "active_claim",
            f"operation {error.operation_id} to the same destination was confirmed and its "
            "send has not resolved; nothing was stored. File the new draft once it has "
            "(follow it with GET /api/v1/operations/{id}); an edit after dispatch began "
            "waits for its reconciliation",
            [
                FieldProblem(
                    "payload",
                    f"{error.target_ref} has a send in flight ({error.operation_id})",
                    "wait until that operation is final, then file again",
                )
            ],
        )
    return refuse(
        request,
        409,
        "request_id_conflict",
        f"request_id {draft.source.request_id!r} was already used for operation "
        f"{error.operation_id} with different content; use a new request_id",
        [
            FieldProblem(field, "differs from the first request", "use a new request_id")
            for field in error.fields
        ],
    )


def _unavailable(request: web.Request, error: CapabilitiesUnavailable) -> web.Response:
    """503: the adapter could not be read now; retry (the only refusal a retry can cure)."""
    return refuse(request, 503, "capabilities_unavailable", f"{error}; nothing was stored")


async def _draft(request: web.Request) -> Draft | web.Response:
    """The body as a draft, or the refusal the API answers it with (nothing stored)."""
    raw = await request.read()
    try:
        body = loads_strict(raw)
    except ProblemsFound as error:  # too deep, a key twice, a lone surrogate
        return _problems(request, error)
    except ValueError as error:
        return refuse(
            request,
            422,
            "invalid_json",
            f"the body is not valid JSON ({error})",
            [FieldProblem("$", "not valid JSON", "send a UTF-8 JSON object")],
        )
    proposer = request[PROPOSER_KEY]
    settings = request.app[CONFIG_KEY].settings
    try:
        capabilities = await _capabilities(request, body)
        reading = await _readings(request, body)
        return build_draft(body, proposer.settings, settings, capabilities, reading)
    except ProblemsFound as error:
        return _problems(request, error)
    except Forbidden as error:
        return refuse(request, 403, error.code, str(error))
    except CapabilitiesUnavailable as error:
        return _unavailable(request, error)
    except ReadingUnavailable as error:  # the proposal's own venue could not be read
        log.warning("the %s capability check could not read its venue: %s", body.get("kind"), error)
        return _unavailable(request, CapabilitiesUnavailable(str(body.get("kind"))))


async def propose(request: web.Request) -> web.Response:
    draft = await _draft(request)
    if isinstance(draft, web.Response):
        return draft
    if draft.kind in request.app[PRECHECKS_KEY]:  # other kinds: the store answers replays
        vetted = await _vetted(request, draft)
        if isinstance(vetted, web.Response):
            return vetted
    try:
        proposed = await request.app[STORE_KEY].propose(draft)
    except (RequestConflict, ActiveClaim) as error:
        return _conflict(request, draft, error)
    if proposed.created:
        request.app[ON_PROPOSED_KEY]()  # the card worker need not wait for its next poll
    view = await op_view(request.app[STORE_KEY], proposed.operation)
    superseded = list(proposed.superseded)
    # said in the answer: a new draft to a destination closes its open one (ProposedView)
    extra = {
        "supersedes": superseded,
        "supersedes_note": supersession_note(view.id, view.target, superseded),
    }
    return answer(request, view, status=201 if proposed.created else 200, extra=extra)


async def check(request: web.Request) -> web.Response:
    """Whether `propose` would take this body: its answer without filing anything."""
    draft = await _draft(request)
    if isinstance(draft, web.Response):
        return draft
    before = await _vetted(request, draft)
    if isinstance(before, web.Response):
        return before
    approval = draft.approval
    return web.json_response(
        {
            "admissible": True,
            "kind": draft.kind,
            "audience": draft.audience.name,
            "request_id": draft.source.request_id,
            "title": draft.projection.get("title"),
            "terms": dict(draft.projection),
            "simulated": draft.simulated,
            "world": world.value if (world := draft.acts_in) else None,
            "expires_in_s": draft.expires_in_s,
            "approval": {
                "required": approval.required,
                "approvers": list(approval.approvers_of(draft.audience)),
                "rule": approval.rule,
                "why": approval.why,
            },
            "replays": before.id if before is not None else None,
        }
    )


async def _vetted(request: web.Request, draft: Draft) -> Operation | web.Response | None:
    """The operation `draft` replays (None: a new one), or the refusal filing it gets: a
    request_id conflict (409), the pre-check's problems (422) or a failed read (503). A
    replay answers its operation as filed, without a second pre-check."""
    try:
        before = await request.app[STORE_KEY].filed_before(draft)
    except (RequestConflict, ActiveClaim) as error:
        return _conflict(request, draft, error)
    if before is not None:
        return before
    try:
        problems = await _precheck(request, draft)
    except ReadingUnavailable as error:
        log.warning("the %s pre-check could not read the venue: %s", draft.kind, error)
        return _unavailable(request, CapabilitiesUnavailable(draft.kind))
    if problems:
        return refuse(
            request,
            422,
            "precheck_would_refuse",
            "the venue's pre-check refuses this operation as it stands: it could never run "
            "as confirmed, so no card is offered; nothing was stored",
            problems,
        )
    return None


async def _precheck(request: web.Request, draft: Draft) -> list[FieldProblem]:
    """The problems the pre-check refuses `draft` with now ([] if its kind has none).
    Raises ReadingUnavailable only when the venue could not be read; anything else it
    raises is an error of ours, answered as one (500), never as "retry later"."""
    if (run := request.app[PRECHECKS_KEY].get(draft.kind)) is None:
        return []
    return list(await run(draft.payload))


class StoreReads:
    """What a domain may read from the store before filing (`Domain.read_for_filing`)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def signal(self, message_id: str) -> Signal | None:
        return await signal_of(self.store, message_id)


async def _readings(request: web.Request, body: Any) -> object:
    """What the body's domain reads for its preconditions before filing (a message draft:
    its destination's baseline and the inbound signal it names); None for an unknown kind."""
    payload = body.get("payload") if isinstance(body, dict) else None
    kind = body.get("kind") if isinstance(body, dict) else None
    plugin = DOMAINS.get(kind) if isinstance(kind, str) else None
    if plugin is None or not isinstance(payload, dict):
        return None
    settings = request.app[CONFIG_KEY].settings.domains.for_kind(plugin.kind)
    return await plugin.read_for_filing(payload, settings, StoreReads(request.app[STORE_KEY]))


async def _capabilities(request: web.Request, body: Any) -> Any:
    """The capabilities of the adapter for the body's kind, read fresh (None if it has none)."""
    kind = body.get("kind") if isinstance(body, dict) else None
    if not isinstance(kind, str) or (read := request.app[CAPABILITIES_KEY].get(kind)) is None:
        return None
    if not request[PROPOSER_KEY].settings.may_propose(kind):
        return None  # build_draft answers 403 first; no venue read for a kind it may not use
    try:
        return await read()
    except Exception as error:
        log.warning("reading the %s adapter's capabilities failed: %s", kind, error)
        raise CapabilitiesUnavailable(kind) from None
