"""The effective policy as one document, and what changed between two of them, in words. Pure.

On every start the bot writes down what decides who may do what (bot/app/policy_record.py):
the audiences (chat, operators, quorum, self-approval, escalation), the approval rules, who
may propose what to whom, how long an operation may wait, the web's second look, and each
domain's limits and switches (`Domain.policy`). Its digest names a version; a version that
differs from the last one recorded is a change, kept with the lines below ("audience ops:
operators: added Bob (ou_bob)", "rule large-orders: above: 50000 → 40000") in the audit
chain's store, announced in the audiences' chats and listed on the dashboard.

The per-audience digest (bot/config/policy.py `policy_digest`) stays what cards are filed
under: a change of another audience's policy leaves this audience's cards valid.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from bot.config.policy import policy_digests
from bot.config.settings import Settings
from kernel.canonical import canonical_json, sha256_hex
from workers.domains import DOMAINS

DOCUMENT_SCHEME = "countersign.effective-policy.v1"

# how each top-level part of the document names its members in a line
SECTION_WORDS = {
    "audiences": "audience {}",
    "rules": "rule {}",
    "proposers": "proposer {}",
    "domains": "[domains.{}]",
}
PART_WORDS = {"operations": "operations", "second_look": "second look"}


def effective_policy(settings: Settings) -> dict[str, Any]:
    """Everything that decides who may propose, confirm and execute what, as plain JSON."""
    web = settings.web
    return {
        "scheme": DOCUMENT_SCHEME,
        "audiences": {
            audience.name: {
                "chat_id": audience.chat_id,
                "operators": sorted(audience.operators),
                "required_confirmations": audience.required_confirmations,
                "allow_self_approval": audience.allow_self_approval,
                "escalate_to": audience.escalate_to,
                "remind_before_s": audience.remind_before_s,
                "delegation_max_days": audience.delegation_max_days,
            }
            for audience in settings.audiences
        },
        # listed order matters (ties go to the first listed): it is kept
        "rules": {
            rule.name: {"order": place, **rule.model_dump(mode="json", exclude={"name"})}
            for place, rule in enumerate(settings.approval_rules, start=1)
        },
        "proposers": {
            proposer.name: {
                "kinds": sorted(proposer.kinds),
                "audiences": sorted(proposer.audiences),
                "reply_chats": None
                if proposer.reply_chats is None
                else sorted(proposer.reply_chats),
            }
            for proposer in settings.proposers
        },
        "operations": {
            "default_expires_in_s": settings.operations.default_expires_in_s,
            "max_expires_in_s": settings.operations.max_expires_in_s,
        },
        "second_look": {
            "above": web.reauth_above,
            "currency": web.reauth_currency,
            "within_s": web.reauth_within_s,
        },
        "domains": {
            plugin.config_table: plugin.policy(settings.domains.for_kind(plugin.kind))
            for plugin in sorted(DOMAINS.values(), key=lambda plugin: plugin.config_table)
        },
    }


def document_digest(document: Mapping[str, Any]) -> str:
    return sha256_hex(canonical_json(dict(document)))


@dataclass(frozen=True)
class PolicySnapshot:
    """A policy as recorded: the document, its digest, and each audience's card digest."""

    document: dict[str, Any]
    digest: str
    audiences: dict[str, str]  # audience name -> the digest its cards are filed under


def snapshot(settings: Settings) -> PolicySnapshot:
    document = effective_policy(settings)
    return PolicySnapshot(document, document_digest(document), policy_digests(settings))


@dataclass(frozen=True)
class PolicyChange:
    """One line of a change; `audience`: the audience it concerns (None: every audience)."""

    audience: str | None
    text: str


def _value(value: Any, people: Mapping[str, str]) -> str:
    if isinstance(value, str):
        name = people.get(value)
        return f"{name} ({value})" if name else value
    if isinstance(value, list):
        return "[" + ", ".join(_value(item, people) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value(v, people)}" for k, v in value.items()) + "}"
    return "none" if value is None else canonical_json(value)


def _by_name(value: Any) -> Any:
    """A list of named things (destinations, services, actions) as a map by name, so a
    change names the member rather than printing the list."""
    if (
        isinstance(value, list)
        and value
        and all(isinstance(item, dict) and isinstance(item.get("name"), str) for item in value)
    ):
        return {item["name"]: {k: v for k, v in item.items() if k != "name"} for item in value}
    return value


def _differences(
    before: Any, after: Any, path: tuple[str, ...], people: Mapping[str, str]
) -> Iterator[tuple[tuple[str, ...], str]]:
    """(where, what) for each difference, depth first in key order."""
    before, after = _by_name(before), _by_name(after)
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted({*before, *after}):
            if key not in before:
                yield (*path, key), f"added {_value(after[key], people)}"
            elif key not in after:
                yield (*path, key), "removed"
            else:
                yield from _differences(before[key], after[key], (*path, key), people)
        return
    scalars = (str, int, float, bool, type(None))
    if (
        isinstance(before, list)
        and isinstance(after, list)
        and all(isinstance(item, scalars) for item in [*before, *after])
    ):
        added = [item for item in after if item not in before]
        removed = [item for item in before if item not in after]
        words = [f"added {_value(item, people)}" for item in added]
        words += [f"removed {_value(item, people)}" for item in removed]
        if words:
            yield path, "; ".join(words)
        return
    if before != after:
        yield path, f"{_value(before, people)} → {_value(after, people)}"


def _line(path: tuple[str, ...], what: str) -> PolicyChange:
    section, *rest = path
    if section in SECTION_WORDS and rest:
        member, *rest = rest
        where = SECTION_WORDS[section].format(member)
    else:
        where = PART_WORDS.get(section, section)
    audience = path[1] if section == "audiences" and len(path) > 1 else None
    if not rest:  # a whole member added or removed
        return PolicyChange(audience, f"{where}: {what}")
    return PolicyChange(audience, f"{where}: {'.'.join(rest)}: {what}")


def policy_changes(
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any],
    people: Mapping[str, str] | None = None,
) -> list[PolicyChange]:
    """What changed from `before` to `after`, a line each ("audience ops: operators: added
    Bob (ou_bob)"); `before` None: the first policy recorded, one line saying so."""
    if before is None:
        return [PolicyChange(None, "first policy recorded")]
    if before.get("scheme") != after.get("scheme"):
        return [PolicyChange(None, f"policy scheme {before.get('scheme')} → {after.get('scheme')}")]
    body = {key: value for key, value in before.items() if key != "scheme"}
    later = {key: value for key, value in after.items() if key != "scheme"}
    return [_line(path, what) for path, what in _differences(body, later, (), people or {})]
