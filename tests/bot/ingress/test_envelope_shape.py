"""What makes a click envelope unstorable as sent, and how a refused click is kept bounded."""

from __future__ import annotations

from typing import Any

import pytest

from bot.decide.bounds import storable
from bot.ingress.decision import parse_click
from bot.ingress.envelope_shape import MAX_DEPTH, MAX_ID_CHARS, envelope_problem
from store import KEY_CHARS, stored_key, without_secrets
from tests.support.clicks import card_action

VALUE = {"op": "01JNB0000000000000000000AB", "action": "confirm", "digest": "a" * 64, "v": 1}


def nested(depth: int) -> Any:
    node: Any = "leaf"
    for _ in range(depth):
        node = {"n": node}
    return node


def with_change(change: Any) -> dict[str, Any]:
    envelope = card_action(dict(VALUE))
    change(envelope)
    return envelope


def test_a_lark_envelope_has_no_problem() -> None:
    assert envelope_problem(card_action(dict(VALUE))) is None


@pytest.mark.parametrize(
    ("change", "named"),
    [
        pytest.param(
            lambda e: e["event"]["action"]["value"].update(v=1.0),
            "float at $.event.action.value.v",
            id="float",
        ),
        pytest.param(
            lambda e: e["event"]["action"].update(form_value=nested(MAX_DEPTH)),
            f"deeper than {MAX_DEPTH}",
            id="deep",
        ),
        pytest.param(
            lambda e: e["event"]["action"].update(form_value=nested(900)),
            f"deeper than {MAX_DEPTH}",
            id="very-deep",
        ),
        pytest.param(
            lambda e: e["header"].update(event_id="e" * (MAX_ID_CHARS + 1)),
            "header.event_id is longer",
            id="long-event-id",
        ),
        pytest.param(
            lambda e: e["event"]["operator"].update(open_id="ou_" + "x" * MAX_ID_CHARS),
            "event.operator.open_id is longer",
            id="long-open-id",
        ),
        pytest.param(
            lambda e: e["event"]["context"].update(open_chat_id="oc_\x00"),
            "NUL or a lone surrogate at $.event.context.open_chat_id",
            id="nul",
        ),
        pytest.param(
            lambda e: e["event"]["action"].update({"\ud800": 1}),
            "lone surrogate at $.event.action.? (its key)",
            id="surrogate-key",
        ),
        pytest.param(lambda e: e["header"].pop("event_id"), "event_id is missing", id="no-id"),
    ],
)
def test_unstorable_envelopes_are_named_by_place(change: Any, named: str) -> None:
    envelope = with_change(change)
    problem = envelope_problem(envelope)
    assert problem is not None and named in problem, problem
    assert parse_click(envelope).problem == problem


def test_a_long_event_id_within_bounds_is_no_problem_and_is_stored_by_digest() -> None:
    long_id = "e" * MAX_ID_CHARS
    click = parse_click(with_change(lambda e: e["header"].update(event_id=long_id)))
    assert click.problem is None
    assert click.event_key == stored_key(long_id) != long_id
    assert len(click.event_key) <= KEY_CHARS
    assert click.as_store_click().event_id == click.event_key
    assert stored_key(click.event_key) == click.event_key  # stable when applied again
    assert stored_key("ev_short") == "ev_short"


def test_a_refused_clicks_fields_are_bounded_and_storable() -> None:
    envelope = card_action(
        {"op": "x" * 500, "action": "confirm\x00", "digest": "\ud800" * 300, "v": 1},
        operator="ou_" + "o" * 1000,
        chat_id="oc_\x00",
        message_id="om_" + "m" * 1000,
        event_id="e" * 5000,
    )
    stored = parse_click(envelope).as_store_click()
    assert len(stored.operation_id) == 64 and len(stored.digest) == 128
    assert stored.action == "confirm\ufffd"
    assert set(stored.digest) == {"\ufffd"}
    assert stored.operator_open_id is not None and len(stored.operator_open_id) == 128
    assert stored.chat_id == "oc_\ufffd"
    assert stored.message_id is not None and len(stored.message_id) == 128
    assert stored.event_id is not None and stored.event_id.startswith("sha256:")
    assert storable("ok", 10) == "ok"


def test_secrets_are_dropped_from_a_copy_of_the_envelope() -> None:
    envelope = card_action(dict(VALUE))
    envelope["token"] = "v1-token"
    envelope["encrypt"] = "ciphertext"
    cleaned = without_secrets(envelope)
    assert "token" not in cleaned and "encrypt" not in cleaned
    assert "token" not in cleaned["header"] and "token" not in cleaned["event"]
    assert cleaned["event"]["action"] == envelope["event"]["action"]
    assert envelope["header"]["token"] == "v_token"  # the caller's envelope is untouched
    assert envelope["event"]["token"] == "c-token"
    assert without_secrets({"header": "junk"}) == {"header": "junk"}
