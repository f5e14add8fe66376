"""Pure checks Lark applies to messages and card content (size, schema, mentions, updates).

The JSON 2.0 structure itself is checked in `larksandbox/cards/schema.py`; refusals carry
Lark's text (`larksandbox/cards/problem.py`). Sources: docs/lark-reference.md §4.1, §6.1.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from larksandbox.cards.problem import (
    INVALID_USER,
    PARSE_ERR_MSG,
    PARSE_ERROR,
    card_content_failed,
)
from larksandbox.cards.problem import CardProblem as CardProblem
from larksandbox.cards.schema import schema_problem
from larksandbox.state import CARD_MAX_BYTES, TEXT_MAX_BYTES


def body_size_problem(size: int, msg_type: str) -> CardProblem | None:
    """Lark measures the request body: at most 30 KB for a card, 150 KB for a text (230025).

    The body, not the card: `content` is a JSON string inside it, so every quote of the card
    costs a backslash more, and a client that escapes non-ASCII (Python's `json` default) sends
    each CJK character as six bytes. (lark-oapi sends UTF-8, unescaped, sync and async.)
    """
    limit = TEXT_MAX_BYTES if msg_type == "text" else CARD_MAX_BYTES
    if size > limit:
        return CardProblem(
            230025,
            f"The length of the message content reaches its limit: the request body is "
            f"{size} bytes, at most {limit // 1024} KB",
        )
    return None


def parse_card(
    content: str, *, max_bytes: int | None = CARD_MAX_BYTES
) -> dict[str, Any] | CardProblem:
    """The card a `content` string holds. `max_bytes` bounds the card's own JSON (for a card in
    a callback answer); the OpenAPI paths pass None and bound the request body instead."""
    if max_bytes is not None and len(content.encode("utf-8")) > max_bytes:
        return CardProblem(230025, f"The message body exceeds {max_bytes // 1024} KB")
    try:
        card = json.loads(content)
    except ValueError as error:
        return card_content_failed(PARSE_ERROR, PARSE_ERR_MSG, value=f"not JSON: {error}")
    if not isinstance(card, dict):
        return card_content_failed(PARSE_ERROR, PARSE_ERR_MSG, value="a card is a JSON object")
    return card


def check_card(card: dict[str, Any]) -> CardProblem | None:
    """Lark's structural checks. A 1.0 card ignores what it does not support; a 2.0 card is
    refused for it (card-json-v2-breaking-changes-release-notes)."""
    return schema_problem(card) if is_v2(card) else None


# mentions: <at id=ou_x></at>, <at ids=ou_x,ou_y></at> in cards, <at user_id="ou_x"></at> in
# texts (either spelling in both; emails are not checked)
MENTION = re.compile(r"<at\s+(?:ids?|user_id|open_id)\s*=\s*([^>\s]+)[^>]*>", re.IGNORECASE)


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


def _mentioned(text: str) -> Iterator[str]:
    for ids in MENTION.findall(text):
        for open_id in ids.strip("\"'").split(","):
            if open_id.strip("\"'") != "all":
                yield open_id.strip("\"'")


def _people(node: Any) -> Iterator[str]:
    """The users of person and person_list components."""
    if isinstance(node, dict):
        if node.get("tag") == "person" and isinstance(node.get("user_id"), str):
            yield node["user_id"]
        if node.get("tag") == "person_list" and isinstance(node.get("persons"), list):
            for person in node["persons"]:
                if isinstance(person, dict) and isinstance(person.get("id"), str):
                    yield person["id"]
        for child in node.values():
            yield from _people(child)
    elif isinstance(node, list):
        for child in node:
            yield from _people(child)


def unknown_mention(card: dict[str, Any], known: set[str]) -> CardProblem | None:
    """Lark refuses the whole card when an <at> (in markdown or lark_md, every locale) or a
    person component names no one the app can see: 230099, sub-code 100290 (documented in the
    im/v1/message create sub-code table, docs/lark-reference.md §6.1)."""
    named = [user for content in _texts(card) for user in _mentioned(content)]
    for user in [*named, *_people(card)]:
        if user not in known:
            return card_content_failed(
                INVALID_USER,
                "There is an invalid user resource(at/person) in your card",
                value=user,
            )
    return None


def unknown_text_mention(text: str, known: set[str]) -> CardProblem | None:
    """A text message's <at user_id=...> naming no one the app can see. Lark's answer for a
    text is not documented (100290 is a card sub-code); the sandbox refuses it with 230001,
    invalid parameter (larksandbox/README.md lists the choice)."""
    for user in _mentioned(text):
        if user not in known:
            return CardProblem(
                230001,
                f"Your request contains an invalid request parameter, ext=invalid at user: {user}",
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
