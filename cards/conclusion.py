"""The conclusion that goes back to the proposer: a bounded reply text and the webhook body.

Pure: both are built from the operation's projection and one of its outcomes.
"""

from __future__ import annotations

from typing import Any

REPLY_MAX_CHARS = 1500


def outcome_parts(detail: dict[str, Any]) -> list[str]:
    """An outcome's details as plain lines: fills, fees (or unknown), reason, protective orders."""
    parts = []
    if detail.get("filled_qty") is not None and detail.get("avg_price") is not None:
        parts.append(f"filled {detail['filled_qty']} at {detail['avg_price']}")
    if "fees" in detail:
        fees = detail["fees"]
        parts.append(
            "fee unknown" if fees is None else f"fees {fees} {detail.get('fee_currency', '')}"
        )
    if detail.get("message_id"):
        parts.append(f"message {detail['message_id']}")
    if detail.get("reason"):
        parts.append(f"reason: {detail['reason']}")
    for child in detail.get("protective") or []:
        parts.append(f"{child['role']} {child['trigger_price']}: {child['status']}")
    return parts


def webhook_body(
    delivery_id: str, view: dict[str, Any], outcome: dict[str, Any], at: str
) -> dict[str, Any]:
    return {
        "delivery_id": delivery_id,
        "operation_id": view["id"],
        "kind": view["kind"],
        "stage": outcome["stage"],
        "outcome": outcome["status"],
        "detail": outcome["detail"],
        "confirm_digest": view["confirm_digest"],
        "outcome_digest": outcome["outcome_digest"],
        "reconciles_digest": outcome["reconciles_digest"],
        "simulated": view["simulated"],
        "confirmed_by": _confirmed_by(view),
        "at": at,
    }


def _confirmed_by(view: dict[str, Any]) -> str | None:
    decision = view.get("decision") or {}
    return decision.get("by") if decision.get("action") == "confirm" else None


def reply_text(view: dict[str, Any], outcome: dict[str, Any]) -> str:
    """One bounded message: what was decided, by whom, the outcome, and the card."""
    simulated = " · SIMULATED" if view["simulated"] else ""
    decision = view.get("decision") or {}
    title = view["terms"].get("title", view["kind"])
    if outcome["stage"] == "reconciled":
        head = (
            f"Reconciled: {title} is {outcome['status']}{simulated} "
            f"(this settles the earlier outcome {str(outcome['reconciles_digest'])[:12]})"
        )
    else:
        head = f"{title}: {outcome['status']}{simulated}"
    lines = [head]
    if decision.get("by"):
        verb = "Rejected" if decision.get("action") == "reject" else "Confirmed"
        lines.append(f"{verb} by {decision['by']} at {decision.get('at')}")
    elif outcome["status"] == "expired":
        lines.append(f"Nobody decided before {outcome['detail'].get('expired_at')}: not run")
    lines += outcome_parts(outcome.get("detail") or {})
    card = view["card"].get("message_id")
    lines.append(f"Card: {card or 'not posted'} · operation {view['id']}")
    text = "\n".join(lines)
    if len(text) > REPLY_MAX_CHARS:
        text = text[: REPLY_MAX_CHARS - 1] + "…"
    return text
