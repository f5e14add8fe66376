"""The demo's order and message proposals, as the dashboard tests file them: each domain's
own `demo()` says what the demo proposes (the service call's demo starts a service, so the
pages' tests, which show orders and messages, leave it out)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workers.domains import DOMAINS

SAMPLE_KINDS = ("finance.order", "message.send")
DEMO_CHATS = {"ops": "oc_ops", "counterparty": "oc_acme"}


@dataclass(frozen=True)
class Sample:
    name: str
    kind: str
    payload: dict[str, Any]


def demo_samples(workdir: Path) -> tuple[Sample, ...]:
    samples: list[Sample] = []
    for kind in SAMPLE_KINDS:
        setup = DOMAINS[kind].demo(DEMO_CHATS, workdir)
        assert setup is not None, kind
        # those Alice's Confirm alone decides: the pages' tests click once (a quorum and a
        # reject with a reason have tests of their own)
        samples += [
            Sample(p.name, kind, dict(p.payload))
            for p in setup.proposals
            if p.name not in setup.decisions
        ]
    return tuple(samples)
