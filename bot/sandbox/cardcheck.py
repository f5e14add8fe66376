"""Pure checks Lark applies to card content (size, schema, shared-update rules)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bot.sandbox.state import CARD_MAX_BYTES


@dataclass(frozen=True)
class CardProblem:
    code: int
    msg: str


def parse_card(content: str) -> dict[str, Any] | CardProblem:
    if len(content.encode("utf-8")) > CARD_MAX_BYTES:
        return CardProblem(230025, f"The message body exceeds {CARD_MAX_BYTES // 1024} KB")
    try:
        card = json.loads(content)
    except ValueError:
        return CardProblem(230099, "Failed to create card content: content is not valid JSON")
    if not isinstance(card, dict):
        return CardProblem(230099, "Failed to create card content: a card is a JSON object")
    if is_v2(card):
        if not isinstance(card.get("body", {}).get("elements", []), list):
            return CardProblem(
                230099, "Failed to create card content: body.elements must be a list"
            )
    return card


def is_v2(card: dict[str, Any]) -> bool:
    return card.get("schema") == "2.0"


def shared(card: dict[str, Any]) -> bool:
    """JSON 2.0 cards are always shared; 1.0 cards only with config.update_multi = true."""
    return is_v2(card) or bool(card.get("config", {}).get("update_multi", False))


def replacement_problem(current: dict[str, Any], new: dict[str, Any]) -> CardProblem | None:
    """Why `new` may not replace `current` on an update, if it may not."""
    if is_v2(current) and not is_v2(new):
        return CardProblem(230099, "A JSON 2.0 card cannot be updated to a JSON 1.0 card")
    if not shared(current) or not shared(new):
        return CardProblem(230099, "Only shared cards (config.update_multi = true) can be updated")
    return None
