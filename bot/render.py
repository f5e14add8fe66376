"""Plain-text rendering of the operation projection for the CLI."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cards.conclusion import outcome_parts
from store.timeutil import parse_iso_utc, utc_now


def relative(iso: str, now: datetime | None = None) -> str:
    delta = int((parse_iso_utc(iso) - (now or utc_now())).total_seconds())
    span = abs(delta)
    text = (
        f"{span // 3600}h{span % 3600 // 60:02d}m"
        if span >= 3600
        else f"{span // 60}m{span % 60:02d}s"
    )
    return f"in {text}" if delta >= 0 else f"{text} ago"


def term_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def operation_text(view: dict[str, Any]) -> str:
    terms = view["terms"]
    marker = "  SIMULATED" if view["simulated"] else ""
    audience = view["audience"]
    lines = [
        f"{view['id']}  {view['kind']}  {view['state']}{marker}",
        f"  {terms.get('title', '')}",
    ]
    lines += [f"    {term['name']}: {term_value(term['value'])}" for term in terms.get("terms", [])]
    lines += [
        f"  executor: {view['executor']['name']} r{view['executor']['revision']}",
        f"  audience: {audience['name']} ({audience['chat_id']}), operators "
        + ", ".join(audience["operators"]),
        f"  expires:  {view['expires_at']} ({relative(view['expires_at'])})",
        f"  digest:   {view['confirm_digest']}",
        f"  request:  {view['source']['proposer']}/{view['source']['request_id']}",
    ]
    lines += policy_lines(view) + decision_lines(view)
    if view.get("execution"):
        lines.append(f"  execution: {view['execution']['state']}")
    for outcome in view.get("outcomes") or []:  # every stage, oldest first, as the API lists
        lines.append(f"  outcome:  {outcome['stage']:<10} {outcome['status']}{marker}")
        lines += [f"    {part}" for part in outcome_parts(outcome.get("detail") or {})]
    return "\n".join(lines)


def policy_lines(view: dict[str, Any]) -> list[str]:
    """What the approval policy asks and who has confirmed (nothing for one from anyone)."""
    approval = view.get("approval") or {}
    lines = []
    if approval.get("required", 1) > 1 or approval.get("rule"):
        why = f" ({approval['why']})" if approval.get("why") else ""
        lines.append(
            f"  approval: {approval['required']} of {', '.join(approval['approvers'])}{why}"
        )
        if approval.get("notional"):
            lines.append(f"  notional: {approval['notional']}")
        if approval.get("confirmed_by"):
            lines.append(f"  confirmed by: {', '.join(approval['confirmed_by'])}")
    return lines


def decision_lines(view: dict[str, Any]) -> list[str]:
    """The decision, and its reason where the operator gave one."""
    lines = []
    decision = view.get("decision") or {}
    if decision.get("by"):
        lines.append(f"  decision: {decision['action']} by {decision['by']} at {decision['at']}")
        if decision.get("reason"):
            lines.append(f"  reason:   {decision['reason']}")
    return lines


def operation_row(view: dict[str, Any]) -> str:
    marker = " SIM" if view["simulated"] else ""
    title = view["terms"].get("title", "")
    return f"{view['id']}  {view['state']:<22} {view['kind']:<14} {title}{marker}"
