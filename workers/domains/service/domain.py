"""service.call plugged in: `ServiceDomain`, the registration that names its payload
(`schema.py`), settings, runner, checks (the action's arguments against its JSON Schema, the
endpoints), words, examples and demo: a person confirms one call of an action a configured
service offers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernel.problems import FieldProblem
from workers.domains.base import Amount, DemoSetup, Domain, Projection, RunnerContext, terms
from workers.domains.execution import Runner
from workers.domains.service.arguments import (
    amount,
    argument_problems,
    argument_terms,
    schema_problems,
)
from workers.domains.service.examples import EXAMPLES
from workers.domains.service.runner import ServiceRunner
from workers.domains.service.schema import (
    EXECUTOR_NAME,
    EXECUTOR_REVISION,
    KIND,
    ServiceCallV1,
    endpoint_shown,
)
from workers.domains.service.settings import Service, ServiceSettings
from workers.domains.service.words import NOT_RETRIED, OUTCOMES, RETRIED, WORDS
from workers.targets import BadUrl, parse_callback_url, refusal


def _known(names: list[str]) -> str:
    return ", ".join(names) or "none configured"


class ServiceDomain(Domain[ServiceCallV1, ServiceSettings]):
    kind = KIND
    config_table = "service"
    settings_model = ServiceSettings
    payload_models: Mapping[int, type[ServiceCallV1]] = {1: ServiceCallV1}
    executor_name = EXECUTOR_NAME
    executor_revision = EXECUTOR_REVISION
    simulated = False  # it calls a real service
    words = WORDS
    outcomes = OUTCOMES
    examples = EXAMPLES
    moves_amount = True  # an action may mark an argument as its amount (x-amount)

    def payload_schema(self, settings: ServiceSettings) -> dict[str, Any]:
        """One variant per configured action, its arguments' own schema inside, so an agent
        (MCP, docs) sees exactly what each action takes."""
        variants = [
            {
                "title": f"{action.title} · {service.name}",
                "type": "object",
                "additionalProperties": False,
                "required": ["service", "action", "arguments"],
                "properties": {
                    "service": {"const": service.name},
                    "action": {"const": action.name},
                    "arguments": action.arguments_schema,
                },
            }
            for service in settings.services
            for action in service.actions
        ]
        if not variants:  # nothing configured: the payload's bare shape
            return super().payload_schema(settings)
        return {"title": "ServiceCallV1", "oneOf": variants}

    def policy(self, settings: ServiceSettings) -> dict[str, Any]:
        """What may be called, where and by whose audience; a call's timeout decides nobody's
        rights."""
        return settings.model_dump(mode="json", exclude={"services": {"__all__": {"timeout_s"}}})

    def project(self, payload: ServiceCallV1) -> Projection:
        # the arguments, labelled from the action's schema, and where the call goes are added
        # by preconditions(), which has the configuration
        return {
            "title": f"{payload.action} · {payload.service}",
            "terms": terms({"service": payload.service, "action": payload.action}),
            "simulated": self.simulated,
        }

    def target_ref(self, payload: ServiceCallV1) -> str:
        return f"service:{payload.service}"

    async def open_runner(self, settings: ServiceSettings, context: RunnerContext) -> Runner:
        return ServiceRunner(settings, context)

    def admit(self, payload: ServiceCallV1, settings: ServiceSettings) -> list[FieldProblem]:
        service = settings.service(payload.service)
        if service is None:
            return [
                FieldProblem(
                    "payload.service",
                    f"no service {payload.service!r}",
                    f"use a configured service ({_known([s.name for s in settings.services])})",
                )
            ]
        action = service.action(payload.action)
        if action is None:
            return [
                FieldProblem(
                    "payload.action",
                    f"service {service.name!r} offers no action {payload.action!r}",
                    f"use one of its actions ({_known([a.name for a in service.actions])})",
                )
            ]
        return argument_problems(action.arguments_schema, payload.arguments)

    def notional(
        self, payload: ServiceCallV1, settings: ServiceSettings, capabilities: object
    ) -> Amount | None:
        found = settings.action(payload.service, payload.action)
        return None if found is None else amount(found[1].arguments_schema, payload.arguments)

    def preconditions(
        self, payload: ServiceCallV1, settings: ServiceSettings, reading: object
    ) -> Projection:
        """The action's title, its arguments labelled from the schema, and where the call
        goes (all bound into the digest: a changed endpoint refuses the call before it is
        sent)."""
        found = settings.action(payload.service, payload.action)
        if found is None:  # admit refused it already
            return {}
        service, action = found
        fixed: dict[str, Any] = {
            "endpoint": endpoint_shown(service),
            "status_endpoint": service.status_endpoint,
            "idempotent": RETRIED if service.idempotent else NOT_RETRIED,
        }
        return {
            "title": f"{action.title} · {service.name}",
            "title_zh": f"{action.title_zh or action.title} · {service.name}",
            "terms": [*argument_terms(action.arguments_schema, payload.arguments), *terms(fixed)],
        }

    def audiences(self, payload: ServiceCallV1, settings: ServiceSettings) -> Sequence[str] | None:
        """A service's calls go to its audience (none set: any the proposer may address)."""
        service = settings.service(payload.service)
        return None if service is None or service.audience is None else [service.audience]

    def expires_in_s(self, payload: ServiceCallV1, settings: ServiceSettings) -> int | None:
        found = settings.action(payload.service, payload.action)
        return None if found is None else found[1].expires_in_s

    def config_problems(self, settings: ServiceSettings) -> list[FieldProblem]:
        problems: list[FieldProblem] = []
        names = [s.name for s in settings.services]
        for twice in sorted({n for n in names if names.count(n) > 1}):
            problems.append(FieldProblem("services", f"{twice!r} is listed twice", "rename one"))
        for i, service in enumerate(settings.services):
            where = f"services[{i}]"
            problems += _url_problems(service, where)
            actions = [a.name for a in service.actions]
            for twice in sorted({n for n in actions if actions.count(n) > 1}):
                problems.append(
                    FieldProblem(f"{where}.actions", f"{twice!r} is listed twice", "rename one")
                )
            for j, action in enumerate(service.actions):
                problems += schema_problems(
                    action.arguments_schema, f"{where}.actions[{j}].arguments"
                )
        return problems

    def demo(self, chats: Mapping[str, str], workdir: Path) -> DemoSetup | None:
        # only `countersign demo` asks: its loopback service loads aiohttp's web server, which
        # the registry's other readers (countersign mcp, the worker child) never use
        from workers.domains.service.demo import demo_setup

        return demo_setup(chats, workdir)


def _url_problems(service: Service, where: str) -> list[FieldProblem]:
    problems = []
    urls = [("endpoint", service.endpoint), ("status_endpoint", service.status_endpoint)]
    for field, url in urls:
        if url is None:
            continue
        try:
            parsed = parse_callback_url(url)
        except BadUrl as error:
            problems.append(FieldProblem(f"{where}.{field}", error.reason, error.fix))
            continue
        if parsed.address is not None and not service.allow_internal:
            why = refusal(parsed.address)
            if why is not None:
                problems.append(
                    FieldProblem(
                        f"{where}.{field}",
                        f"{why}: calls are never sent inside unless the service allows it",
                        "set allow_internal = true on this service (only one you run yourself)",
                    )
                )
    return problems
