"""Can a click (or text message) envelope be Lark's, and stored as sent? Pure.

Lark's envelopes are a few levels deep and carry ids a few dozen characters long; anything
far beyond is not Lark's. The walk names the first bad value by its place (never by its
value); a refused click's fields are bounded by bot/decide/bounds.py. `parse_click`
(bot/ingress/decision.py) reads clicks with these.
"""

from __future__ import annotations

import re
from typing import Any

from bot.decide.bounds import is_utf8, storable

PATH_KEY = re.compile(r"^[A-Za-z0-9_]{1,40}$")  # keys named in a problem; others show as "?"
# Lark's envelopes are a few levels deep and its ids a few dozen characters; anything far
# beyond is not Lark's, and could not be stored as it is (canonical JSON refuses floats,
# PostgreSQL refuses NUL and the column lengths below).
MAX_DEPTH = 32
MAX_ID_CHARS = 256
ID_FIELDS = (
    ("header", "event_id"),
    ("header", "app_id"),
    ("header", "tenant_key"),
    ("event", "operator", "open_id"),
    ("event", "operator", "tenant_key"),
    ("event", "context", "open_chat_id"),
    ("event", "context", "open_message_id"),
)


def _at(node: Any, *path: str) -> Any:
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node


def text_at(node: Any, *path: str) -> str:
    found = _at(node, *path)
    return found if isinstance(found, str) else ""


# Where a node sits: (the parent's trail, the key or list index that leads to it); None is
# the envelope itself. Linked, not joined, so the walk builds no path until one is needed.
Trail = tuple[Any, str | int] | None


def _node_problem(node: Any, depth: int) -> str | None:
    """What is wrong with one value or key, with `{path}` where its place goes."""
    if depth >= MAX_DEPTH:
        return f"nested deeper than {MAX_DEPTH} levels at {{path}}"
    if isinstance(node, float):
        return "a float at {path} (Lark sends none)"
    if isinstance(node, str) and ("\x00" in node or (not node.isascii() and not is_utf8(node))):
        return "a NUL or a lone surrogate at {path}"
    return None


def _path(trail: Trail) -> str:
    steps: list[str | int] = []
    while trail is not None:
        trail, step = trail
        steps.append(step)
    path = "$"
    for step in reversed(steps):
        if isinstance(step, int):
            path = f"{path}[{step}]"[:200]
        else:
            path = f"{path}.{step if PATH_KEY.fullmatch(step) else '?'}"[:200]
    return path


def _first_problem(envelope: Any) -> str | None:
    """The first bad value or key, depth first, walked without recursion (a nesting deep
    enough to break recursion is exactly what this must survive)."""
    stack: list[tuple[Any, int, Trail]] = [(envelope, 0, None)]
    while stack:
        node, depth, trail = stack.pop()
        if (problem := _node_problem(node, depth)) is not None:
            return problem.replace("{path}", _path(trail))
        if isinstance(node, dict):
            for key, item in node.items():
                step: Trail = (trail, key if isinstance(key, str) else "?")
                if (problem := _node_problem(key, depth + 1)) is not None:
                    return problem.replace("{path}", f"{_path(step)} (its key)")
                stack.append((item, depth + 1, step))
        elif isinstance(node, list):
            stack.extend((item, depth + 1, (trail, i)) for i, item in enumerate(node))
    return None


def envelope_problem(envelope: Any) -> str | None:
    """Why this envelope cannot be a click from Lark, named by place (never by value)."""
    if (problem := _first_problem(envelope)) is not None:
        return problem
    for where in ID_FIELDS:
        if len(text_at(envelope, *where)) > MAX_ID_CHARS:
            return f"{'.'.join(where)} is longer than {MAX_ID_CHARS} characters"
    if not text_at(envelope, "header", "event_id"):
        return "header.event_id is missing"
    return None


# the places of a text message event the listener reads, and what each must be when present
Place = tuple[str, ...]
TEXT_OBJECTS: tuple[Place, ...] = (
    ("header",),
    ("event",),
    ("event", "message"),
    ("event", "sender"),
)
TEXT_STRINGS: tuple[Place, ...] = (
    ("event", "message", "chat_id"),
    ("event", "message", "chat_type"),
    ("event", "message", "content"),
    ("event", "message", "create_time"),
    ("event", "sender", "sender_type"),
)


def text_envelope_problem(envelope: Any) -> str | None:
    """Why this envelope cannot be a text message event from Lark, named by place (never by
    value): no try at answering it could ever succeed."""
    if (problem := _first_problem(envelope)) is not None:
        return problem
    for where in TEXT_OBJECTS:
        if not isinstance(_at(envelope, *where), dict):
            return f"{'.'.join(where)} is not an object"
    for where in TEXT_STRINGS:
        if not isinstance(_at(envelope, *where), str | None):
            return f"{'.'.join(where)} is not a string"
    mentions = _at(envelope, "event", "message", "mentions")
    if mentions is not None and not (
        isinstance(mentions, list) and all(isinstance(m, dict) for m in mentions)
    ):
        return "event.message.mentions is not a list of objects"
    message_id = _at(envelope, "event", "message", "message_id")
    if not isinstance(message_id, str) or not message_id:
        return "event.message.message_id is missing"
    if len(message_id) > MAX_ID_CHARS:
        return f"event.message.message_id is longer than {MAX_ID_CHARS} characters"
    return None


def text_key(envelope: Any) -> str | None:
    """What a text event is kept by: its message id (Lark dedupes text on it), else its
    event id; storable either way. None: it has neither."""
    for where in (("event", "message", "message_id"), ("header", "event_id")):
        if found := text_at(envelope, *where):
            return storable(found, MAX_ID_CHARS)
    return None
