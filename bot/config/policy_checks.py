"""The approval policy's config checks: every audience's policy can be met, and no rule
names what does not exist or could never apply (one of `bot/config/checks.py`'s CHECKS)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from bot.config.settings import ANY, AudienceSettings, Settings
from kernel.problems import FieldProblem
from workers.domains import DOMAINS


def duplicates(names: list[str]) -> set[str]:
    """The names listed more than once."""
    return {name for name in names if names.count(name) > 1}


def approval_policy(settings: Settings, environ: Mapping[str, str]) -> Iterator[FieldProblem]:
    """Every audience's policy can be met, and no rule leaves anyone out by accident: an
    empty operator set, an unknown audience or kind, or more confirmations than operators
    fail closed here, with the field named (bot/config/policy.py applies the rules)."""
    for index, audience in enumerate(settings.audiences):
        required = getattr(audience, "required_confirmations", 1)
        operators = getattr(audience, "operators", None) or []
        for twice in sorted(duplicates(list(operators))):
            yield FieldProblem(
                f"audiences[{index}].operators",
                f"{twice} is listed twice (one person counts once)",
                "list each operator once",
            )
        operators = sorted(set(operators))
        if operators and required > len(operators):
            yield FieldProblem(
                f"audiences[{index}].required_confirmations",
                f"needs {required} confirmations but audience {audience.name!r} has "
                f"{len(operators)} operator(s), so nothing could ever be confirmed",
                "lower required_confirmations or add operators",
            )
    known = {audience.name: audience for audience in settings.audiences}
    for index, audience in enumerate(settings.audiences):
        escalate_to = getattr(audience, "escalate_to", None)
        if escalate_to is None:
            continue
        if escalate_to == audience.name or escalate_to not in known:
            yield FieldProblem(
                f"audiences[{index}].escalate_to",
                f"{escalate_to!r} is not another configured audience",
                f"name one of: {', '.join(sorted(set(known) - {audience.name})) or 'none'}",
            )
        elif getattr(audience, "remind_before_s", None) is None:
            yield FieldProblem(
                f"audiences[{index}].escalate_to",
                "escalates at the reminder, and this audience sets no remind_before_s",
                "set remind_before_s (how long before expiry to remind and escalate)",
            )
        elif known[escalate_to].chat_id == audience.chat_id:
            yield FieldProblem(
                f"audiences[{index}].escalate_to",
                f"audience {escalate_to!r} posts to the same chat {audience.chat_id}",
                "escalate to an audience with a chat of its own",
            )
    for name in sorted(duplicates([rule.name for rule in settings.approval_rules])):
        yield FieldProblem("approval_rules", f"name {name!r} is used twice", "rename one")
    for index, rule in enumerate(settings.approval_rules):
        where = f"approval_rules[{index}]"
        yield from _never_applies(where, rule)
        for twice in sorted(duplicates(list(rule.operators or []))):
            yield FieldProblem(
                f"{where}.operators",
                f"{twice} is listed twice (one person counts once)",
                "list each operator once",
            )
        for name in rule.audiences:
            if name != ANY and name not in known:
                yield FieldProblem(
                    f"{where}.audiences",
                    f"no audience {name!r}",
                    f'use one of: {", ".join(sorted(known)) or "none configured"}, or "*"',
                )
        for kind in rule.kinds:
            if kind != ANY and kind not in DOMAINS:
                yield FieldProblem(
                    f"{where}.kinds",
                    f"unknown kind {kind!r}",
                    f'use one of: {", ".join(sorted(DOMAINS))}, or "*"',
                )
        if (rule.above is None) != (rule.currency is None):
            yield FieldProblem(
                f"{where}.above",
                "an amount needs its currency and a currency its amount",
                'set both (e.g. above = "50000", currency = "USDC") or neither',
            )
        if rule.operators is not None and not rule.operators:
            yield FieldProblem(
                f"{where}.operators",
                "is empty, so nobody could confirm what this rule covers",
                "name the operators who may confirm, or leave operators out for all of them",
            )
            continue
        covered = [
            audience
            for audience in settings.audiences
            if ANY in rule.audiences or audience.name in rule.audiences
        ]
        for audience in covered:
            yield from _rule_against(where, rule, audience)


def _never_applies(where: str, rule: Any) -> Iterator[FieldProblem]:
    """A rule that could never match an operation is a mistake, not a policy."""
    for field in ("audiences", "kinds"):
        if not getattr(rule, field):
            yield FieldProblem(
                f"{where}.{field}",
                "is empty, so the rule would never apply",
                f'name at least one, or leave {field} out for all ("*")',
            )
    kinds = set(rule.kinds)
    if rule.above is not None and kinds and ANY not in kinds:
        amountless = {kind for kind in kinds if kind in DOMAINS and not DOMAINS[kind].moves_amount}
        if kinds == amountless:
            with_amount = sorted(kind for kind, plugin in DOMAINS.items() if plugin.moves_amount)
            yield FieldProblem(
                f"{where}.above",
                f"applies by amount, and {', '.join(sorted(kinds))} moves none",
                "remove above/currency, or name a kind with an amount "
                f"({', '.join(with_amount) or 'none is registered'})",
            )


def _rule_against(where: str, rule: Any, audience: AudienceSettings) -> Iterator[FieldProblem]:
    """`rule` as it would apply to `audience`'s operations."""
    operators = getattr(audience, "operators", None) or []
    base = getattr(audience, "required_confirmations", 1)
    outsiders = sorted(set(rule.operators or ()) - set(operators))
    if outsiders:
        yield FieldProblem(
            f"{where}.operators",
            f"{', '.join(outsiders)} is not an operator of audience {audience.name!r}",
            "a rule narrows who may confirm: name only the audience's operators",
        )
    required = rule.required_confirmations or base
    if required < base:
        yield FieldProblem(
            f"{where}.required_confirmations",
            f"{required} is below audience {audience.name!r}'s {base}",
            "a rule only raises what an operation needs: raise it or remove it",
        )
    approvers = set(rule.operators) & set(operators) if rule.operators else set(operators)
    if approvers and required > len(approvers):
        yield FieldProblem(
            f"{where}.required_confirmations",
            f"needs {required} confirmations from {len(approvers)} operator(s) of audience "
            f"{audience.name!r}, so what it covers could never be confirmed",
            "lower required_confirmations or name more operators",
        )
