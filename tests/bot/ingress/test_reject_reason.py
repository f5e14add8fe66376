"""A reject's reason as typed in the card's form: one readable line, bounded; anything Lark
could not have sent refuses the click."""

from __future__ import annotations

from typing import Any

import pytest

from bot.decide.provenance import reason_well_formed
from bot.decide.reject_reason import cleaned_reason, reason_problem
from bot.ingress.decision import parse_click
from cards.render import REASON_MAX_CHARS
from kernel.reasons import Reason


@pytest.mark.parametrize(
    ("typed", "kept"),
    [
        ("Price moved", "Price moved"),
        ("  two\n\nlines\tand\ttabs  ", "two lines and tabs"),
        ("zero\u200bwidth and bidi\u202emark", "zero width and bidi mark"),
        ("bell\x07 and line\u2028separator", "bell and line separator"),
        ("", None),
        ("   \n\t", None),
        # cut visibly, never silently: the ellipsis is the last of the kept characters
        ("x" * (REASON_MAX_CHARS + 50), "x" * (REASON_MAX_CHARS - 1) + "…"),
    ],
)
def test_the_reason_is_kept_as_one_readable_bounded_line(typed: str, kept: str | None) -> None:
    assert cleaned_reason({"reason": typed}) == kept


@pytest.mark.parametrize(
    "form_value", [None, {}, {"reason": ""}, {"reason": "ok", "other": 1}, {"reason": "x" * 1000}]
)
def test_what_lark_can_send_is_well_formed(form_value: Any) -> None:
    assert reason_problem(form_value) is None


@pytest.mark.parametrize(
    "form_value", [[], "text", {"reason": 5}, {"reason": ["a"]}, {"reason": "x" * 1001}]
)
def test_what_lark_cannot_send_refuses_the_click(form_value: Any) -> None:
    assert reason_problem(form_value) is not None
    envelope = {
        "header": {"event_id": "ev"},
        "event": {"action": {"value": {}, "form_value": form_value}},
    }
    click = parse_click(envelope)
    assert reason_well_formed(click, None) is Reason.MALFORMED_VALUE  # type: ignore[arg-type]


def test_a_confirm_never_carries_a_reason() -> None:
    value = {"op": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "action": "confirm", "digest": "a" * 64, "v": 1}
    envelope = {"event": {"action": {"value": value, "form_value": {"reason": "typed anyway"}}}}
    assert parse_click(envelope).as_store_click().reason is None
    value["action"] = "reject"
    assert parse_click(envelope).as_store_click().reason == "typed anyway"
    envelope["event"]["action"]["name"] = "reject_no_reason"  # the form's other submit
    assert parse_click(envelope).as_store_click().reason is None
