"""message.send schema: the text rules over the whole of Unicode, and the outbound text."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import regex
from pydantic import ValidationError

from tests.support.factories import MESSAGE_PAYLOAD
from workers.domains.base import STORED
from workers.domains.message.schema import MessageSendV1

EVERY_FORMAT_CHARACTER = [
    chr(cp) for cp in range(sys.maxunicode + 1) if regex.fullmatch(r"\p{Cf}", chr(cp))
]


def message(**changes: Any) -> MessageSendV1:
    return MessageSendV1.model_validate({**MESSAGE_PAYLOAD, **changes})


def refusal(text: str) -> str:
    with pytest.raises(ValidationError) as caught:
        message(text=text)
    [error] = caught.value.errors()
    assert error["loc"] == ("text",)
    return str(error["msg"])


def test_every_format_character_is_refused_between_letters() -> None:
    assert len(EVERY_FORMAT_CHARACTER) > 150  # bidi marks, zero widths, tags, and the rest
    for char in EVERY_FORMAT_CHARACTER:
        assert f"U+{ord(char):04X}" in refusal(f"a{char}b"), hex(ord(char))


def test_the_only_exception_is_a_joiner_between_pictographs() -> None:
    joiner = "\u200d"
    assert message(text=f"\U0001f3f3\ufe0f{joiner}\U0001f308").text.count(joiner) == 1
    for text in (f"{joiner}\U0001f308", f"\U0001f3f3{joiner}", f"\U0001f3f3{joiner}{joiner}x"):
        assert "U+200D" in refusal(text), ascii(text)


def test_a_lone_surrogate_is_refused_by_name_and_position() -> None:
    assert "U+D800 at character 3" in refusal("ab\ud800c")


def test_the_ceiling_counts_characters_after_line_breaks_are_normalised() -> None:
    assert len(message(text="x\r\n" * 10000).text) == 20000  # 30000 as sent, 20000 kept
    assert "30001 characters" in refusal("x" * 30001)


def test_a_stored_payload_is_read_back_as_it_was_admitted() -> None:
    # a draft admitted under earlier rules must still load; the runner re-checks it itself
    stored = {**MESSAGE_PAYLOAD, "text": 'old <at user_id="all"></at>\u200b'}
    assert MessageSendV1.model_validate(stored, context=STORED).text == stored["text"]


def test_the_outbound_text_is_the_approved_text_after_the_listed_mentions() -> None:
    assert message().outbound() == MESSAGE_PAYLOAD["text"]
    mentioning = message(text="Please confirm.", mentions=["ou_carol", "ou_dave"])
    assert mentioning.outbound() == (
        '<at user_id="ou_carol"></at> <at user_id="ou_dave"></at> Please confirm.'
    )
