"""Every registered domain's examples file as shown (issue 31): each one, sent to the running
bot's check endpoint (every check a filing runs: schema, policy, the domain's admission,
capabilities and pre-check against its real runner), is admissible, and nothing is stored.
The stack's domain tables mirror config.example.toml (tests/support/stack.py); a table the
stack does not set itself is taken from the example config as written. Both backends."""

from __future__ import annotations

import tomllib
from typing import Any

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
