"""Decisions, claims and refusals since start, by entry (the Lark card, the web page).

One instance is shared by every entry (built where the process is composed, bot/app/server.py)
and read by `/metrics` (bot/api/metrics.py). A decision is a click that took effect (a
claim, a counted confirmation of N, a reject or a request for changes); a claim is only the
confirmation that completed the quorum; a refusal is a click put on record as refused,
whatever refused it (its envelope, its values, the database, or a recovery after a crash).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kernel.reasons import Reason
from store import Claimed, Counted, Decided, Entry


@dataclass
class DecisionCounters:
    decisions: Counter[tuple[Entry, str]] = field(default_factory=Counter)  # (entry, action)
    claims: Counter[Entry] = field(default_factory=Counter)
    refusals: Counter[tuple[Entry, Reason]] = field(default_factory=Counter)

    def decided(self, entry: Entry, action: str, decided: Claimed | Counted | Decided) -> None:
        self.decisions[(entry, action)] += 1
        if isinstance(decided, Claimed):
            self.claims[entry] += 1

    def refused(self, entry: Entry, reason: Reason) -> None:
        self.refusals[(entry, reason)] += 1
