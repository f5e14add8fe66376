"""The receiver's verifier: False for anything but a fresh, untampered, signed request.

Junk headers (as a hostile or broken sender could send them) must never raise: a verifier
that raises turns a forged request into a 500 on the proposer's side, or worse, into an
exception handler that accepts.
"""

from __future__ import annotations

from typing import Any

import pytest

from workers.webhook_signature import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    signed_headers,
    verify,
)

SECRET = "a-callback-secret-0123456789"
BODY = b'{"delivery_id":"d1","outcome":"filled"}'
NOW = 1_800_000_000.0


def good() -> dict[str, Any]:
    return signed_headers(SECRET, BODY, "d1", NOW)


def test_a_fresh_signed_request_verifies() -> None:
    assert verify(SECRET, good(), BODY, now=NOW) is True


def _with(**changes: Any) -> dict[str, Any]:
    headers = good()
    for name, value in changes.items():
        header = {"ts": TIMESTAMP_HEADER, "sig": SIGNATURE_HEADER}[name]
        if value is None:
            headers.pop(header)
        else:
            headers[header] = value
    return headers


JUNK: list[tuple[str, dict[str, Any]]] = [
    ("no timestamp", _with(ts=None)),
    ("no signature", _with(sig=None)),
    ("empty signature", _with(sig="")),
    ("non-ASCII signature", _with(sig="sha256=" + "é" * 64)),
    ("non-ASCII digits in the timestamp", _with(ts="١٨٠٠٠٠٠٠٠٠")),
    ("superscript digits in the timestamp", _with(ts="¹⁸⁰⁰⁰⁰⁰⁰⁰⁰")),
    ("huge timestamp", _with(ts="9" * 5000)),
    ("negative timestamp", _with(ts="-1800000000")),
    ("timestamp with spaces", _with(ts=" 1800000000 ")),
    ("timestamp as an int", _with(ts=1_800_000_000)),
    ("signature as bytes", _with(sig=good()[SIGNATURE_HEADER].encode())),
    ("signature as None-like object", _with(sig=object())),
    ("timestamp as a list", _with(ts=["1800000000"])),
    ("lone surrogate in the signature", _with(sig="sha256=\udcff")),
    ("NUL in the signature", _with(sig="sha256=\x00")),
    (
        "signature of another body",
        _with(sig=signed_headers(SECRET, b"{}", "d1", NOW)[SIGNATURE_HEADER]),
    ),
]


@pytest.mark.parametrize(("case", "headers"), JUNK, ids=[case for case, _ in JUNK])
def test_junk_headers_are_false_never_an_exception(case: str, headers: dict[str, Any]) -> None:
    assert verify(SECRET, headers, BODY, now=NOW) is False, case


class Exploding(dict[str, Any]):
    """A headers object whose lookups fail (a broken framework adapter)."""

    def get(self, *_args: Any, **_kwargs: Any) -> Any:
        raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")


@pytest.mark.parametrize(
    "headers",
    [None, "not a mapping", 42, Exploding()],
    ids=["None", "a string", "an int", "a mapping that raises"],
)
def test_headers_that_are_not_a_mapping_are_false(headers: Any) -> None:
    assert verify(SECRET, headers, BODY, now=NOW) is False


@pytest.mark.parametrize(
    ("secret", "body"),
    [(None, BODY), (SECRET, None), (SECRET, "a str body"), ("", BODY), ("sécret\udcff", BODY)],
    ids=["no secret", "no body", "a str body", "empty secret", "lone surrogate in the secret"],
)
def test_junk_secret_or_body_is_false(secret: Any, body: Any) -> None:
    assert verify(secret, good(), body, now=NOW) is False
