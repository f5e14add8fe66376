"""Approval policy: what an operation needs before it is claimed, read off the config. Pure.

An audience asks `required_confirmations` distinct operators (default 1). `approval_rules`
raise that by audience, kind and worst-case notional: of the rules that match an operation,
the one with the highest `above` applies, wholly (its number, its narrower operator set);
ties go to the first listed. An amount the domain could not compute counts as above every
amount: a rule by amount then applies (fail closed). What applied is fixed into the
operation's `Approval` when it is filed, with the digest of the audience's policy, so a
policy changed since makes its card stale (store/claims/claim_sql.py compares the digests).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from bot.config.settings import ApprovalRule, AudienceSettings, Settings
from kernel.canonical import canonical_json, sha256_hex
from store import Approval
from workers.domains.base import Amount

POLICY_SCHEME = "countersign.policy.v1"


def _names_audience(rule: ApprovalRule, audience: str) -> bool:
    return "*" in rule.audiences or audience in rule.audiences


def escalation_of(settings: Settings, audience: AudienceSettings) -> AudienceSettings | None:
    """The audience `audience` escalates to, if any (config check: it exists, it is another)."""
    if audience.escalate_to is None:
        return None
    return settings.audience(audience.escalate_to)


def operators_of(settings: Settings, audience: AudienceSettings) -> tuple[str, ...]:
    """Who may decide `audience`'s operations: its operators and its escalation's, sorted."""
    escalation = escalation_of(settings, audience)
    extra = escalation.operators if escalation is not None else []
    return tuple(sorted({*audience.operators, *extra}))


def policy_digest(settings: Settings, audience: AudienceSettings) -> str:
    """sha256 (hex) over everything that decides what `audience`'s operations need."""
    escalation = escalation_of(settings, audience)
    document: dict[str, Any] = {
        "scheme": POLICY_SCHEME,
        "required_confirmations": audience.required_confirmations,
        "operators": list(operators_of(settings, audience)),
        "escalation_chat_id": escalation.chat_id if escalation is not None else None,
        "allow_self_approval": audience.allow_self_approval,
        "rules": [
            rule.model_dump(mode="json")
            for rule in settings.approval_rules
            if _names_audience(rule, audience.name)
        ],
    }
    return sha256_hex(canonical_json(document))


def second_look_above(settings: Settings) -> tuple[Decimal, str] | None:
    """The worst case above which a card's Confirm asks Lark's dialog first: the web's
    re-sign-in amount, so both entries ask a second look of the same operations."""
    web = settings.web
    return None if web.reauth_above is None else (Decimal(web.reauth_above), web.reauth_currency)


def policy_digests(settings: Settings) -> dict[str, str]:
    """Every configured audience's policy digest, by audience name."""
    return {audience.name: policy_digest(settings, audience) for audience in settings.audiences}


def _above(rule: ApprovalRule, notional: Amount | None) -> bool:
    """Whether `notional` is above the rule's amount (a rule without one: always)."""
    if rule.above is None:
        return True
    if notional is None or notional.currency != rule.currency:
        return False  # nothing at stake in the rule's currency
    return notional.value is None or notional.value > Decimal(rule.above)


def applying_rule(
    settings: Settings, audience: AudienceSettings, kind: str, notional: Amount | None
) -> ApprovalRule | None:
    """The rule that applies to an operation, if any."""
    matching = [
        rule
        for rule in settings.approval_rules
        if rule.applies_to(audience.name, kind) and _above(rule, notional)
    ]
    if not matching:
        return None
    # the highest amount wins; a stable max keeps the first listed on a tie
    return max(matching, key=lambda rule: Decimal(rule.above or "-1"))


def amount_words(value: str, currency: str | None) -> str:
    """`50000` -> `50,000 USDC` (grouped for reading; the digits are the rule's own)."""
    whole, _, fraction = value.partition(".")
    grouped = f"{int(whole):,}" + (f".{fraction}" if fraction else "")
    return f"{grouped} {currency}" if currency else grouped


def approval_for(
    settings: Settings, audience: AudienceSettings, kind: str, notional: Amount | None
) -> Approval:
    """What this operation will need, fixed when it is filed."""
    rule = applying_rule(settings, audience, kind, notional)
    required = audience.required_confirmations
    approvers = operators_of(settings, audience)
    escalation = escalation_of(settings, audience)
    threshold = None
    if rule is not None:
        required = rule.required_confirmations or required
        if rule.operators is not None:
            approvers = tuple(sorted(set(rule.operators)))
        if rule.above is not None:
            threshold = amount_words(rule.above, rule.currency)
    return Approval(
        required=required,
        approvers=approvers,
        rule=rule.name if rule is not None else None,
        threshold=threshold,
        notional=notional.text() if notional is not None else None,
        policy=policy_digest(settings, audience),
        escalation_chat_id=escalation.chat_id if escalation is not None else None,
    )
