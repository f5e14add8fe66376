"""What `countersign demo` tells: every registered domain's samples, the clicks that
decide each, and the tally `demo --script` keeps of what behaved."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workers.domains import DOMAINS
from workers.domains.base import ALICE_CONFIRMS, DemoDecision, DemoSetup
from workers.domains.execution import Background

# the sandbox's chats by the roles a domain's demo names (larksandbox/entities.py)
CHATS = {"ops": "oc_ops", "counterparty": "oc_acme"}
# the sandbox's people who click in the script (larksandbox/state.py)
PEOPLE = {"ou_alice": "Alice", "ou_bob": "Bob", "ou_carol": "Carol"}


@dataclass(frozen=True)
class Sample:
    name: str
    kind: str
    payload: dict[str, Any]
    expect: tuple[str, ...]  # card phrases, in the order they must appear
    decisions: tuple[DemoDecision, ...] = ALICE_CONFIRMS  # the clicks, in order


@dataclass
class Tally:
    """The scripted demo's checks: how many behaved, and which did not."""

    ok: int = 0
    failures: list[str] = field(default_factory=list)

    def passed(self) -> None:
        self.ok += 1

    def failed(self, what: str) -> None:
        self.failures.append(what)

    def check(self, held: bool, what: str) -> None:
        if held:
            self.passed()
        else:
            self.failed(what)

    def summary(self) -> str:
        total = self.ok + len(self.failures)
        if not self.failures:
            return f"PASS: {self.ok} of {total} checks behaved"
        return f"FAIL: {len(self.failures)} of {total} checks failed: {', '.join(self.failures)}"


@dataclass
class Story:
    """What every registered domain brings to the demo."""

    tables: dict[str, Any] = field(default_factory=dict)  # [domains.<table>]
    background: list[Background] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    outside_posts: int = 0  # messages the samples post in the counterparty chat
    environ: dict[str, str] = field(default_factory=dict)  # variables the tables name
    approval_rules: list[Mapping[str, object]] = field(default_factory=list)


def story(workdir: Path, setups: Mapping[str, DemoSetup] | None = None) -> Story:
    """Every registered domain's demo; `setups` (by config table) replaces a domain's own
    (`--venue hyperliquid`: finance on the local Hyperliquid)."""
    told = Story()
    for kind, plugin in DOMAINS.items():
        if setups is not None and plugin.config_table in setups:
            setup: DemoSetup | None = setups[plugin.config_table]
        else:
            setup = plugin.demo(CHATS, workdir)
        if setup is None:
            continue
        told.tables[plugin.config_table] = dict(setup.table)
        told.background.extend(setup.background)
        told.samples.extend(
            Sample(
                p.name,
                kind,
                dict(p.payload),
                tuple(setup.expect.get(p.name, ())),
                tuple(setup.decisions.get(p.name, ALICE_CONFIRMS)),
            )
            for p in setup.proposals
        )
        told.approval_rules.extend(setup.approval_rules)
        told.outside_posts += setup.outside_posts
        told.environ.update(setup.environ)
    return told


def how_to_decide(sample: Sample) -> str:
    """The clicks a sample needs, in words, when they are not just Alice's Confirm."""
    if sample.decisions == ALICE_CONFIRMS:
        return ""
    steps = []
    for decision in sample.decisions:
        who = PEOPLE.get(decision.operator, decision.operator)
        typed = f", typing a reason such as {decision.reason!r}" if decision.reason else ""
        steps.append(f"{decision.action} as {who}{typed}")
    return ", then ".join(steps)
