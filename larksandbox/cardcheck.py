"""Pure checks Lark applies to card content (size, schema, shared-update rules)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from larksandbox.state import CARD_MAX_BYTES


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


# card-native mentions: <at id=ou_x></at>, <at ids=ou_x,ou_y></at> (emails are not checked)
CARD_MENTION = re.compile(r"<at\s+ids?=([^>\s]+)\s*>", re.IGNORECASE)


def _texts(node: Any) -> Iterator[str]:
    """Every markdown text of a card, in every locale."""
    if isinstance(node, dict):
        if node.get("tag") in ("markdown", "lark_md"):
            yield str(node.get("content", ""))
            i18n_content = node.get("i18n_content")
            if isinstance(i18n_content, dict):
                yield from (str(each) for each in i18n_content.values())
        for child in node.values():
            yield from _texts(child)
    elif isinstance(node, list):
        for child in node:
            yield from _texts(child)


def unknown_mention(card: dict[str, Any], known: set[str]) -> CardProblem | None:
    """Lark refuses the whole card when an <at id=...> names no one the app can see.

    (Its exact code for this is undocumented; 230099 is the card-content family.)
    """
    for content in _texts(card):
        for ids in CARD_MENTION.findall(content):
            for open_id in ids.strip("\"'").split(","):
                if open_id != "all" and open_id not in known:
                    return CardProblem(
                        230099,
                        f"Failed to create card content: <at> names an unknown user {open_id}",
                    )
    return None


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
