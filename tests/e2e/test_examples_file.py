"""Every registered domain's examples file as shown (issue 31): each one, sent to the running
bot's check endpoint (every check a filing runs: schema, policy, the domain's admission,
capabilities and pre-check against its real runner), is admissible, and nothing is stored.
The stack's domain tables mirror config.example.toml (tests/support/stack.py); a table the
stack does not set itself is taken from the example config as written. And the proposals in
examples/*.json (README's `countersign propose examples/order.json`): each is filed and every
field a person reads is on its card. Both backends."""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any

from larksandbox import answers
from tests.support.processes import ROOT
from tests.support.stack import Stack, StackFactory
from workers.domains import DOMAINS

EXAMPLE_DOMAINS: dict[str, Any] = tomllib.loads(
    (ROOT / "config.example.toml").read_text(encoding="utf-8")
).get("domains", {})
# the tables tests/support/stack.py writes itself, as the example config has them (its own
# venue file, and the same account and destination)
STACK_TABLES = frozenset({"finance", "message"})


async def test_every_example_of_every_kind_passes_the_bots_filing_checks(
    make_stack: StackFactory,
) -> None:
    extra = {t: data for t, data in EXAMPLE_DOMAINS.items() if t not in STACK_TABLES}
    stack: Stack = await make_stack("ws", domains=extra)
    checked = []
    for kind, plugin in sorted(DOMAINS.items()):
        for example in plugin.examples:
            body = {
                "request_id": f"example-{kind}-{example.name}",
                "kind": kind,
                "payload": dict(example.payload),
                "audience": "ops",
            }
            status, answer = await stack.post("/api/v1/operations/check", body)
            assert status == 200 and answer["admissible"], (kind, example.name, answer)
            checked.append(f"{kind}:{example.name}")
    assert len(checked) == sum(len(plugin.examples) for plugin in DOMAINS.values())
    assert not (await stack.store.list_operations(limit=10)).items


# -- examples/*.json: every field a person reads is where the card shows it -------------------

EXAMPLE_FILES = sorted((ROOT / "examples").glob("*.json"))
# a source's routing, never shown: where results go back to
SOURCE_ROUTES = frozenset({"conversation", "callback"})
# a digit group's separator as a card may print it (60,000; 60 000)
GROUPING = re.compile(r"(?<=\d)[,\u00a0\u202f ](?=\d{3}\b)")


def leaves(value: Any, path: str) -> list[tuple[str, str]]:
    """(path, text) of every string and number at any depth (booleans are shown as words)."""
    if isinstance(value, dict):
        return [pair for key, inner in value.items() for pair in leaves(inner, f"{path}.{key}")]
    if isinstance(value, list):
        return [pair for i, inner in enumerate(value) for pair in leaves(inner, f"{path}[{i}]")]
    if isinstance(value, bool) or value is None:
        return []
    return [(path, str(value))]


def card_words(card: dict[str, Any]) -> str:
    """What the card says: its text elements' content, digit groups joined."""
    said = [node["content"] for node in answers._walk(card) if isinstance(node.get("content"), str)]
    return GROUPING.sub("", "\n".join(said))


async def test_every_field_of_every_example_file_is_shown_on_its_card(
    make_stack: StackFactory,
) -> None:
    """What examples/ puts in a proposal for people (the payload, source.reason) is on the card;
    a field the card never shows (source.context) would teach proposers to hide it there."""
    assert EXAMPLE_FILES, "no examples/*.json"
    stack: Stack = await make_stack("ws")
    for path in EXAMPLE_FILES:
        body = json.loads(path.read_text(encoding="utf-8"))
        _, card_id = await stack.offered(body)
        words = card_words(stack.card(card_id))
        source = {k: v for k, v in (body.get("source") or {}).items() if k not in SOURCE_ROUTES}
        shown = leaves(body["payload"], "payload") + leaves(source, "source")
        missing = [(where, text) for where, text in shown if text not in words]
        assert not missing, (path.name, missing, words)
        if isinstance(reason := source.get("reason"), str):
            assert reason in words, (path.name, words)
