"""Proposal intake: a parsed request body becomes a Draft, or a list of field problems.

Pure: no I/O. The HTTP handler parses, calls `build_draft`, and hands the Draft to the store.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StringConstraints, ValidationError

from bot.api.body_shape import shape_problems
from bot.config import OpenId, ProposerSettings, Settings
from bot.config.policy import approval_for, operators_of
from bot.config.validation import problems_from
from kernel.canonical import canonical_json
from kernel.problems import FieldProblem, ProblemsFound
from store import LOCAL_WORLDS, Audience, CallbackRoute, Conversation, Draft, Source
from workers.domains import DOMAINS
from workers.domains.types import StrictModel
from workers.targets import BadUrl, parse_callback_target

MAX_CONTEXT_BYTES = 4096
# the card shows the reason under its header: a sentence or two, not a document
MAX_REASON_CHARS = 280
RequestId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")]


ChatId = Annotated[str, StringConstraints(pattern=r"^oc_[A-Za-z0-9_-]{1,120}$")]
MessageId = Annotated[str, StringConstraints(pattern=r"^om_[A-Za-z0-9_-]{1,120}$")]


class ConversationIn(StrictModel):
    chat_id: ChatId
    message_id: MessageId


class CallbackIn(StrictModel):
    url: Annotated[str, StringConstraints(max_length=2000)]  # parsed by _route_problems
    secret_ref: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")]


class SourceIn(StrictModel):
    requester_open_id: OpenId | None = None
    # why, for the operators: checked by _reason_problems (one readable line, bounded)
    reason: str | None = None
    context: dict[str, Any] = Field(default_factory=dict)
    conversation: ConversationIn | None = None
    callback: CallbackIn | None = None


class ProposalIn(StrictModel):
    request_id: RequestId
    kind: str
    schema_version: int = 1
    payload: dict[str, Any]
    audience: str
    expires_in_s: int | None = None
    source: SourceIn | None = None


class Forbidden(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class CapabilitiesUnavailable(Exception):
    """The kind is admitted only against its adapter's capabilities, and none were read."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"the {kind} adapter's capabilities could not be read")
        self.kind = kind


def _reason_problems(reason: str | None) -> list[FieldProblem]:
    """`source.reason` is one readable line the card shows as plain text, or nothing (control
    and format characters anywhere in a body are refused before, by `_shape_problems`)."""
    if reason is None:
        return []
    fix = f"send one line of plain text, at most {MAX_REASON_CHARS} characters, or leave it out"
    if not reason.strip():
        return [FieldProblem("source.reason", "is empty", fix)]
    if len(reason.strip()) > MAX_REASON_CHARS:
        return [
            FieldProblem(
                "source.reason",
                f"is {len(reason.strip())} characters; the cap is {MAX_REASON_CHARS}",
                fix,
            )
        ]
    return []


def _route_problems(
    source: SourceIn, proposer: ProposerSettings, settings: Settings
) -> list[FieldProblem]:
    """Where results go back: a chat this proposer may reply into, a URL that parses strictly.

    The conversation's message id is the proposer's word too: the delivery worker asks Lark
    that it is in this chat before the first reply.
    """
    problems = []
    if source.conversation is not None:
        chat = source.conversation.chat_id
        allowed = settings.reply_chats(proposer)
        outside = settings.outside_chats().get(chat)
        fix = (
            f"name a message in one of the chats {proposer.name!r} may reply into: "
            f"{', '.join(allowed) or 'none'} (or add the chat to the proposer's reply_chats)"
        )
        if outside is not None:
            reason = (
                f"{chat} is the chat of {outside!r}: the counterparty reads it, so no result "
                "is replied there"
            )
            problems.append(FieldProblem("source.conversation.chat_id", reason, fix))
        elif chat not in allowed:
            reason = f"proposer {proposer.name!r} may not reply into {chat}"
            problems.append(FieldProblem("source.conversation.chat_id", reason, fix))
    if source.callback is not None:
        try:  # an IP literal inside could only fail at delivery: refused now, as it would be
            parse_callback_target(source.callback.url, settings.deliveries.allow_internal_targets)
        except BadUrl as bad:
            problems.append(FieldProblem("source.callback.url", bad.reason, bad.fix))
    return problems


def _auto_send_fits(after_s: int, expires_in_s: int, required: int) -> None:
    """A time box ends before the operation expires, and decides only what one person could
    (the clock never stands in for a quorum)."""
    if after_s >= expires_in_s:
        raise ProblemsFound(
            [
                FieldProblem(
                    "payload.auto_send_after_s",
                    f"is {after_s} s, not before the operation expires ({expires_in_s} s)",
                    "ask for a shorter time box or a later expiry",
                )
            ]
        )
    if required > 1:
        raise ProblemsFound(
            [
                FieldProblem(
                    "payload.auto_send_after_s",
                    f"this draft needs {required} confirmations; the clock cannot give them",
                    "leave auto_send_after_s out for drafts a policy gives a quorum",
                )
            ]
        )


def with_additions(projection: dict[str, Any], additions: dict[str, Any]) -> dict[str, Any]:
    """The domain's projection with what its preconditions add (terms appended)."""
    more = additions.get("terms") or []
    return {**projection, **additions, "terms": [*projection["terms"], *more]}


def build_draft(
    body: Any,
    proposer: ProposerSettings,
    settings: Settings,
    capabilities: object = None,
    reading: object = None,
) -> Draft:
    """`capabilities`: the adapter's, read by the caller for this body's kind (or None);
    `reading`: what the caller read for its preconditions (a message's baseline, or None)."""
    if not isinstance(body, dict):
        raise ProblemsFound([FieldProblem("$", "the body is not a JSON object", "send an object")])
    kind = body.get("kind")
    domain = DOMAINS.get(kind) if isinstance(kind, str) else None
    shape = shape_problems(body, domain.free_text_fields if domain else frozenset())
    if shape:
        raise ProblemsFound(shape)
    try:
        request = ProposalIn.model_validate(body)
    except ValidationError as error:
        raise ProblemsFound(problems_from(error)) from None

    if domain is None:
        raise ProblemsFound(
            [
                FieldProblem(
                    "kind",
                    f"unknown kind {request.kind!r}",
                    f"use one of {', '.join(sorted(DOMAINS))}",
                )
            ],
            code="unknown_kind",
        )
    if not proposer.may_propose(domain.kind):
        raise Forbidden(
            "kind_not_allowed", f"proposer {proposer.name!r} may not propose {domain.kind}"
        )
    domain_settings = settings.domains.for_kind(domain.kind)
    if not domain.enabled(domain_settings):
        raise ProblemsFound(
            [
                FieldProblem(
                    "kind",
                    f"the {domain.kind} domain is disabled here",
                    f"ask an administrator to enable [domains.{domain.config_table}]",
                )
            ],
            code="domain_disabled",
        )
    schema = domain.schema(request.schema_version)
    if schema is None:
        raise ProblemsFound(
            [
                FieldProblem(
                    "schema_version",
                    f"{domain.kind} has no schema version {request.schema_version}",
                    "use schema_version 1",
                )
            ],
            code="unsupported_schema_version",
        )
    audience = settings.audience(request.audience)
    if audience is None:
        known = ", ".join(a.name for a in settings.audiences) or "none configured"
        raise ProblemsFound(
            [FieldProblem("audience", f"no audience {request.audience!r}", f"use one of: {known}")]
        )
    if not proposer.may_address(audience.name):
        raise Forbidden(
            "audience_not_allowed", f"proposer {proposer.name!r} may not address {audience.name!r}"
        )

    problems: list[FieldProblem] = []
    payload_bytes = len(canonical_json(request.payload).encode("utf-8"))
    cap = settings.http.max_payload_bytes
    if payload_bytes > cap:
        problems.append(
            FieldProblem(
                "payload", f"is {payload_bytes} bytes; the cap is {cap}", "make it smaller"
            )
        )
    payload, payload_problems = None, []  # reported in their place below
    try:
        payload = schema.model_validate(request.payload)
    except ValidationError as error:
        payload_problems = problems_from(error, "payload")
    ops = settings.operations
    expires_in_s = request.expires_in_s
    if expires_in_s is None:  # the domain's own default (an action's), within the bounds
        own = None if payload is None else domain.expires_in_s(payload, domain_settings)
        expires_in_s = ops.default_expires_in_s if own is None else own
        expires_in_s = max(30, min(expires_in_s, ops.max_expires_in_s))
    if not 30 <= expires_in_s <= ops.max_expires_in_s:
        problems.append(
            FieldProblem(
                "expires_in_s",
                f"{expires_in_s} is outside 30..{ops.max_expires_in_s} seconds",
                "choose an expiry within that range",
            )
        )
    source = request.source or SourceIn()
    context_bytes = len(canonical_json(source.context).encode("utf-8"))
    if context_bytes > MAX_CONTEXT_BYTES:
        problems.append(
            FieldProblem(
                "source.context",
                f"is {context_bytes} bytes; the cap is {MAX_CONTEXT_BYTES}",
                "keep only references (ids, links) in the context",
            )
        )
    problems.extend(_route_problems(source, proposer, settings))
    problems.extend(_reason_problems(source.reason))
    if (
        source.callback is not None
        and source.callback.secret_ref not in proposer.callback_secret_env
    ):
        named = ", ".join(sorted(proposer.callback_secret_env)) or "none"
        problems.append(
            FieldProblem(
                "source.callback.secret_ref",
                f"proposer {proposer.name!r} has no callback secret named "
                f"{source.callback.secret_ref!r} (it has: {named})",
                "name one of the proposer's callback_secret_env entries, or add it to its config",
            )
        )
    problems.extend(payload_problems)
    if payload is not None:
        problems.extend(domain.admit(payload, domain_settings))
        allowed = domain.audiences(payload, domain_settings)
        if allowed is not None and audience.name not in allowed:
            problems.append(
                FieldProblem(
                    "audience",
                    f"this {domain.kind} goes only to {', '.join(allowed) or 'no audience'}",
                    f"address one of: {', '.join(allowed) or 'none (fix the config)'}",
                )
            )
        if domain.needs_capabilities:
            if capabilities is None:
                raise CapabilitiesUnavailable(domain.kind)
            problems.extend(domain.capability_problems(payload, capabilities))
    if problems or payload is None:
        raise ProblemsFound(problems)
    # only an admissible draft meets its preconditions: their refusal has a code of its own
    additions = domain.preconditions(payload, domain_settings, reading)
    notional = domain.notional(payload, domain_settings, capabilities)
    approval = approval_for(settings, audience, domain.kind, notional)
    auto_send_after_s = domain.auto_send_after_s(payload)
    if auto_send_after_s is not None:
        _auto_send_fits(auto_send_after_s, expires_in_s, approval.required)
    requester = source.requester_open_id
    others = set(approval.approvers) - {requester or ""}
    if approval.required > 1 and len(others) < approval.required:
        # the requester never counts toward a quorum (one confirming alone is the audience's
        # allow_self_approval, checked at the click)
        raise ProblemsFound(
            [
                FieldProblem(
                    "source.requester_open_id",
                    f"this operation needs {approval.required} confirmation(s) from "
                    f"{', '.join(approval.approvers)}, and its requester cannot be one",
                    "propose it under another requester or ask an administrator to "
                    "widen the audience",
                )
            ],
            code="approval_impossible",
        )

    # the world and the executor this payload runs on, bound into the digest
    world = domain.world(payload, domain_settings)
    executor_name, executor_revision = domain.executor(payload, domain_settings)
    return Draft(
        kind=domain.kind,
        schema_version=request.schema_version,
        executor_name=executor_name,
        executor_revision=executor_revision,
        world=world,
        simulated=world in LOCAL_WORLDS,
        payload=payload.model_dump(mode="python", exclude_none=True),
        projection=with_additions(domain.project(payload), additions),
        audience=Audience(
            name=audience.name,
            chat_id=audience.chat_id,
            operators=operators_of(settings, audience),
            allow_self_approval=audience.allow_self_approval,
        ),
        approval=approval,
        remind_before_s=audience.remind_before_s,
        target_ref=domain.target_ref(payload),
        supersede_open=domain.supersedes_open_drafts,
        announce_filing=domain.filing_receipt(payload, domain_settings) is not None,
        auto_send_after_s=auto_send_after_s,
        expires_in_s=expires_in_s,
        source=Source(
            proposer=proposer.name,
            request_id=request.request_id,
            requester_open_id=source.requester_open_id,
            context=source.context,
            reason=source.reason.strip() if source.reason else None,
            conversation=(
                Conversation(source.conversation.chat_id, source.conversation.message_id)
                if source.conversation
                else None
            ),
            callback=(
                CallbackRoute(source.callback.url, source.callback.secret_ref)
                if source.callback
                else None
            ),
        ),
        request_content={
            "kind": request.kind,
            "schema_version": request.schema_version,
            "payload": request.payload,
            "audience": request.audience,
            "expires_in_s": expires_in_s,
            "source": body.get("source"),
        },
    )
