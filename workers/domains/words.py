"""The words a domain speaks on every surface: `Said` (en and zh), `Meaning` (what an outcome
status says: words, tone, finality) and `KindWords` (a kind's card title, headlines and term
labels). Each domain's `words.py` builds its own from these; the executor's own statuses
(`workers.domains.execution`) too."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from store import Tone


@dataclass(frozen=True)
class Said:
    """Words in every language a surface speaks."""

    en: str
    zh: str

    def as_json(self) -> dict[str, str]:
        return {"en": self.en, "zh": self.zh}


@dataclass(frozen=True)
class Meaning:
    """What an outcome status says, stored with the outcome so no reader guesses: its words,
    how it reads, and whether it is final (nothing more happens by itself) or still working
    (the executor keeps looking; `?until=final` and every waiter keep waiting)."""

    words: Said
    tone: Tone
    final: bool


@dataclass(frozen=True)
class KindWords:
    """A kind's words on every surface. `partly` takes {count} and {required}."""

    title: Said  # the card's title: "Confirm order"
    waiting: Said  # the headline while nobody has decided: "Order to confirm"
    partly: Said  # the headline while a quorum fills: "Order: 1 of 2 confirmed"
    terms: Mapping[str, Said]  # a label for every term name the projection may show
