from __future__ import annotations

import pytest

from cards.strings import LANGS, REFUSALS, refusal_text
from kernel.reasons import Reason


@pytest.mark.parametrize("reason", list(Reason))
def test_every_reason_has_an_actionable_text_in_every_language(reason: Reason) -> None:
    texts = [refusal_text(reason, lang) for lang in LANGS]
    assert all(text.strip() for text in texts)
    assert len(set(texts)) == len(LANGS), "each language has its own text"


def test_the_catalogue_has_no_entries_for_unknown_reasons() -> None:
    assert set(REFUSALS) == set(Reason)
