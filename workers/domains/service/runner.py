"""service.call after the claim: one signed POST of the confirmed call to the service, keyed
by the operation's stable client id (`Idempotency-Key`).

2xx: completed, with the service's bounded answer; 4xx: refused, with its message; a
timeout, a reset, a 3xx or a 5xx: unknown, reconciled by the service's status endpoint (GET
with the key), never by sending again, unless the service declares itself idempotent
(then the same call with the same key may go again, inside its idempotency window). A
service with neither leaves an unknown call to a person (`unresolved`).

When countersign will not send the call again it asks the status endpoint to fence the key:
a service that never saw it records it as never to be run and says so (`fenced`), which
makes "never received" decisive at once (`not_submitted`): a late POST of it is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from kernel.canonical import canonical_json
from workers.domains.base import RunnerContext
from workers.domains.execution import (
    NOT_SUBMITTED,
    Observed,
    Refusal,
    Runner,
    SubmissionUnknown,
    Unresolvable,
)
from workers.domains.service.arguments import argument_problems
from workers.domains.service.calls import (
    Answer,
    NotSent,
    Target,
    answer_reason,
    answer_text,
    call_headers,
    compact,
    exchange,
    status_headers,
    status_params,
)
from workers.domains.service.schema import (
    EXECUTOR_NAME,
    EXECUTOR_REVISION,
    KIND,
    ServiceCallV1,
    endpoint_shown,
)
from workers.domains.service.settings import Action, Service, ServiceSettings
from workers.domains.service.words import COMPLETED, NOT_SENT, REFUSED
from workers.pinned import Resolve, system_resolve

if TYPE_CHECKING:  # annotations only: the registry loads no SQLAlchemy (countersign mcp)
    from store import Operation

log = logging.getLogger("countersign.service")

# a signing secret shorter than this is refused (the service shares it: `openssl rand -hex 32`)
MIN_SECRET_CHARS = 16
RESENT = "sent again with the same Idempotency-Key after the first answer was lost"
FENCED = "the service fenced the key: it never received the call and never will"


def call_body(
    op: Operation,
    call: ServiceCallV1,
    claim_id: str | None,
    people: Mapping[str, str],
    client_id: str,
) -> bytes:
    """What the service receives: the confirmed call and the proof around it. The same
    bytes every time for one operation (a re-send must match the first)."""
    approvers = op.confirmed_by or ((op.decided_by,) if op.decided_by else ())
    return canonical_json(
        {
            "operation_id": op.id,
            "client_id": client_id,
            "service": call.service,
            "action": call.action,
            "arguments": call.arguments,
            "claim_id": claim_id,
            "confirm_digest": op.confirm_digest,
            "confirmed_by": [{"open_id": who, "name": people.get(who, who)} for who in approvers],
            "audience": op.envelope.audience.name,
            "proposer": op.envelope.source.proposer,
            "requested_by": op.envelope.source.requester_open_id,
        }
    ).encode("utf-8")


class ServiceRunner(Runner):
    kind = KIND
    executor_name = EXECUTOR_NAME
    executor_revision = EXECUTOR_REVISION

    def __init__(
        self,
        settings: ServiceSettings,
        context: RunnerContext,
        *,
        resolve: Resolve = system_resolve,
    ) -> None:
        self.settings = settings
        self.enabled = settings.enabled
        self.context = context
        self.resolve = resolve
        self.clock: Callable[[], datetime] = context.clock

    # -- the configuration the operator confirmed against -------------------------------------

    @staticmethod
    def call(op: Operation) -> ServiceCallV1:
        return ServiceCallV1.model_validate(op.payload)

    def _configured(self, op: Operation) -> tuple[ServiceCallV1, Service, Action] | Refusal:
        call = self.call(op)
        found = self.settings.action(call.service, call.action)
        if found is None:
            return Refusal(
                "service_action_gone",
                f"service {call.service!r} no longer offers action {call.action!r}",
                "configure it again, or propose a call of a configured action",
            )
        service, action = found
        shown = _term(op, "endpoint")
        if shown != endpoint_shown(service):
            return Refusal(
                "service_endpoint_changed",
                f"the operators confirmed a call to {shown}; {service.name!r} is now "
                f"configured at {endpoint_shown(service)}",
                "propose the call again so operators confirm where it goes",
            )
        return call, service, action

    def _secret(self, service: Service) -> str | None:
        secret = self.context.environ.get(service.secret_env)
        return secret or None

    async def prepare(self, op: Operation) -> Refusal | None:
        found = self._configured(op)
        if isinstance(found, Refusal):
            return found
        call, service, action = found
        if service.audience is not None and op.envelope.audience.name != service.audience:
            return Refusal(
                "service_audience",
                f"calls of {service.name!r} are decided by audience {service.audience!r}; "
                f"this one was confirmed in {op.envelope.audience.name!r}",
                f"propose it to audience {service.audience!r}",
            )
        secret = self._secret(service)
        if secret is None or len(secret) < MIN_SECRET_CHARS:
            state = "is not set" if secret is None else f"is under {MIN_SECRET_CHARS} characters"
            return Refusal(
                "service_secret_missing",
                f"the signing secret of {service.name!r} ({service.secret_env}) {state}",
                f"export {service.secret_env} (shared with the service) for the workers, "
                "then propose the call again",
            )
        problems = argument_problems(action.arguments_schema, call.arguments)
        if problems:
            first = problems[0]
            return Refusal(
                "arguments_no_longer_valid",
                f"{first.field} {first.reason} under the action's schema as configured now",
                "propose the call again with arguments the schema allows",
            )
        return None

    # -- the one call ------------------------------------------------------------------------

    async def submit(self, op: Operation, client_id: str) -> Observed:
        found = self._configured(op)
        if isinstance(found, Refusal):  # changed since prepare: still nothing sent
            return Observed(NOT_SENT, {"reason": found.reason})
        return await self._post(op, found[0], found[1], client_id)

    async def _post(
        self,
        op: Operation,
        call: ServiceCallV1,
        service: Service,
        client_id: str,
        *,
        resent: bool = False,
    ) -> Observed:
        secret = self._secret(service)
        if secret is None:
            if resent:
                raise SubmissionUnknown(f"{service.secret_env} is not set: cannot ask again")
            return Observed(NOT_SENT, {"reason": f"{service.secret_env} is not set"})
        claim_id = await self.context.decision_of(op.id)
        body = call_body(op, call, claim_id, self.context.people, client_id)
        headers = call_headers(secret, body, client_id, op.id)
        target = Target(service.endpoint, self._internal(service), service.timeout_s)
        try:
            answer = await exchange(target, "POST", headers, body, resolve=self.resolve)
        except NotSent as error:
            if resent:  # the first one may still have run: stay unknown
                raise SubmissionUnknown(str(error)) from None
            log.warning("%s: call to %s not sent: %s", op.id, service.name, error)
            return Observed(NOT_SENT, {"reason": str(error), "idempotency_key": client_id})
        if not resent:
            self.context.on_dispatched(client_id)  # the crash tests' "it left" point
        return self._answered(answer, client_id, resent=resent)

    def _answered(self, answer: Answer, client_id: str, *, resent: bool) -> Observed:
        detail: dict[str, Any] = {"http_status": answer.status, "idempotency_key": client_id}
        if resent:
            detail["reason"] = RESENT
        if 200 <= answer.status < 300:
            return Observed(COMPLETED, {**detail, "answer": answer_text(answer)})
        if 400 <= answer.status < 500:
            return Observed(REFUSED, {**detail, "reason": answer_reason(answer)})
        # 5xx: it may have run before failing; 3xx: a redirect we never follow, after the
        # service may have acted (post-redirect-get)
        raise SubmissionUnknown(f"the service answered HTTP {answer.status}")

    def _internal(self, service: Service) -> bool:
        return service.allow_internal or self.context.allow_internal_targets

    # -- what became of an unknown call ------------------------------------------------------

    async def lookup(
        self, op: Operation, client_id: str, dispatched_at: datetime | None
    ) -> Observed | None:
        found = self._configured(op)
        if isinstance(found, Refusal):
            raise Unresolvable(
                f"{found.reason}: a person must check whether the call "
                f"(Idempotency-Key {client_id}) ran"
            )
        call, service, _action = found
        may_resend = service.idempotent and self._inside_window(service, dispatched_at)
        if service.status_endpoint is not None:
            # not sent again: the service is asked to fence the key, so "never received" holds
            known = await self._status(op, service, client_id, fence=not may_resend)
            if known is not None or not may_resend:
                return known  # None: never received (unfenced), concluded not_submitted in time
        elif not may_resend:
            raise Unresolvable(self._person_must_check(service, call, client_id, dispatched_at))
        return await self._post(op, call, service, client_id, resent=True)

    def _inside_window(self, service: Service, dispatched_at: datetime | None) -> bool:
        if dispatched_at is None:
            return False
        return self.clock() - dispatched_at < timedelta(seconds=service.idempotency_window_s)

    @staticmethod
    def _person_must_check(
        service: Service, call: ServiceCallV1, client_id: str, dispatched_at: datetime | None
    ) -> str:
        if service.idempotent:
            why = "its idempotency window has passed and it has no status endpoint"
        else:
            why = "it has no status endpoint and is not idempotent"
        return (
            f"the service has no status endpoint: a person must check whether {service.name} "
            f"ran {call.action} (Idempotency-Key {client_id}); countersign does not send it "
            f"again because {why}"
        )

    async def _status(
        self, op: Operation, service: Service, client_id: str, *, fence: bool
    ) -> Observed | None:
        secret = self._secret(service)
        if secret is None:
            raise SubmissionUnknown(f"{service.secret_env} is not set: cannot ask for the status")
        assert service.status_endpoint is not None
        target = Target(service.status_endpoint, self._internal(service), service.timeout_s)
        try:
            answer = await exchange(
                target,
                "GET",
                status_headers(secret, client_id, op.id, fence=fence),
                None,
                params=status_params(client_id, fence=fence),
                resolve=self.resolve,
            )
        except NotSent as error:
            raise SubmissionUnknown(f"status not read: {error}") from None
        return self._known(answer, client_id)

    @staticmethod
    def _known(answer: Answer, client_id: str) -> Observed | None:
        """The status endpoint's word: completed / refused (with the answer), unknown and
        fenced (never received, and never to be run: decisive), unknown (never received so
        far), anything else: ask again later."""
        found = answer.json()
        unknown = isinstance(found, dict) and found.get("status") == "unknown"
        if answer.status == 200 and unknown and found.get("fenced") is True:
            return Observed(
                NOT_SUBMITTED,
                {"idempotency_key": client_id, "reconciled_by": "status", "reason": FENCED},
            )
        if answer.status == 404 or unknown:
            return None
        if answer.status != 200 or not isinstance(found, dict):
            raise SubmissionUnknown(f"the status endpoint answered HTTP {answer.status}")
        detail: dict[str, Any] = {"idempotency_key": client_id, "reconciled_by": "status"}
        if "http_status" in found and isinstance(found["http_status"], int):
            detail["http_status"] = found["http_status"]
        inner = Answer(200, compact(found.get("answer")).encode(), False)
        if found.get("status") == COMPLETED:
            return Observed(COMPLETED, {**detail, "answer": answer_text(inner)})
        if found.get("status") == REFUSED:
            words = found.get("message") or found.get("answer") or "refused"
            reason = words if isinstance(words, str) else answer_text(inner)
            return Observed(REFUSED, {**detail, "reason": reason[:500]})
        raise SubmissionUnknown(f"the service says {str(found.get('status'))[:40]!r}: not settled")


def _term(op: Operation, name: str) -> object:
    return next(
        (t.get("value") for t in op.projection.get("terms", []) if t.get("name") == name), None
    )
