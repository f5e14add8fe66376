from __future__ import annotations

from decimal import Decimal

import pytest

from kernel.canonical import (
    EncodedObject,
    FloatRefused,
    canonical_digest,
    canonical_json,
    float_paths,
    loads_strict,
    nesting_depth,
    record_json,
)
from kernel.problems import ProblemsFound


def test_canonical_json_sorts_keys_drops_whitespace_and_keeps_utf8() -> None:
    assert canonical_json({"b": 1, "a": ["é", True, None]}) == '{"a":["é",true,null],"b":1}'


def test_decimals_become_plain_strings_never_floats() -> None:
    assert (
        canonical_json({"q": Decimal("0.010"), "p": Decimal("1E+3")}) == '{"p":"1000","q":"0.010"}'
    )


@pytest.mark.parametrize("value", [0.5, {"a": [1.0]}, Decimal("NaN"), Decimal("Infinity")])
def test_floats_and_non_finite_decimals_are_refused(value: object) -> None:
    with pytest.raises(FloatRefused):
        canonical_json(value)


def test_key_order_does_not_change_the_digest_but_values_do() -> None:
    assert canonical_digest({"a": "1", "b": "2"}) == canonical_digest({"b": "2", "a": "1"})
    assert canonical_digest({"a": "1"}) != canonical_digest({"a": "1.0"})


def test_strict_loading_names_every_float_nan_and_exponent_by_path() -> None:
    body = loads_strict(
        '{"payload": {"quantity": 0.5, "legs": [1, 2e3], "x": NaN}, "n": 3, "inf": -Infinity}'
    )
    found = dict(float_paths(body))
    assert found == {
        "payload.quantity": "0.5",
        "payload.legs[1]": "2e3",
        "payload.x": "NaN",
        "inf": "-Infinity",
    }


@pytest.mark.parametrize(
    "text, depth",
    [
        ("1", 0),
        ('{"a": [1, {"b": []}]}', 4),
        ('["[[[[", "]]"]', 1),  # brackets inside strings are text
        ('["\\"[[[", {"k\\\\": [[]]}]', 4),  # an escaped quote, an escaped backslash
        ('["\\\\\\"[[[["]', 1),  # an escaped backslash, then an escaped quote
        ("[" * 1000 + "]" * 1000, 1000),
    ],
)
def test_nesting_depth_is_counted_without_parsing(text: str, depth: int) -> None:
    assert nesting_depth(text) == depth
    assert nesting_depth(text.encode("utf-16")) == depth  # bytes decode as json.loads would


def test_strict_loading_refuses_what_it_cannot_keep_exactly() -> None:
    for text, field in [
        ("[" * 65 + "]" * 65, "$"),
        ('{"a": {"b": 1, "b": 2}}', "a.b"),
        ('{"a": ["ok", "\\udc00"]}', "a[1]"),
    ]:
        with pytest.raises(ProblemsFound) as refused:
            loads_strict(text)
        assert refused.value.code == "invalid_json"
        assert [p.field for p in refused.value.problems] == [field]
    assert loads_strict("[" * 64 + "]" * 64) is not None
    assert loads_strict('"\\ud83d\\ude00"') == "\U0001f600"


def test_an_encoded_answer_is_the_object_and_its_record_json_encoded_once() -> None:
    answer = {"toast": {"type": "success", "content": "已确认"}, "card": {"data": {"n": [1, 2]}}}
    encoded = EncodedObject(answer)
    assert encoded == answer  # read as the object it holds
    # what the ack sends and what is stored for replays: the same text as encoding it anew
    assert record_json(encoded) == record_json(answer) == encoded.encoded
    answer["toast"] = {}  # the object it was built from is not read again
    assert record_json(encoded) != record_json(answer)
