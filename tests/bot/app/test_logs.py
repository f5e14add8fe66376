"""Log lines: JSON when asked, each carrying its operation id, never a secret."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from bot.app.logs import REDACTED, JsonFormatter, OperationFilter, SecretFilter
from kernel.logcontext import about

SECRET = "app-secret-0123456789"


@pytest.fixture
def captured() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(OperationFilter())
    handler.addFilter(SecretFilter([SECRET, "short"]))
    logger = logging.getLogger("countersign.test-logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield logger, out
    finally:
        logger.removeHandler(handler)


def lines(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_record_made_about_an_operation_carries_its_id(
    captured: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, out = captured
    with about("01OPERATION"):
        logger.info("outcome %s", "filled")
    logger.info("no operation here")
    first, second = lines(out)
    assert first == {**first, "operation_id": "01OPERATION", "message": "outcome filled"}
    assert first["level"] == "info" and first["logger"] == "countersign.test-logs"
    assert "operation_id" not in second


def test_secrets_are_scrubbed_from_messages_and_tracebacks(
    captured: tuple[logging.Logger, io.StringIO],
) -> None:
    logger, out = captured
    logger.warning("token rejected: %s", SECRET)
    try:
        raise RuntimeError(f"connect failed with {SECRET}")
    except RuntimeError:
        logger.exception("call failed")
    text = out.getvalue()
    assert SECRET not in text
    message, failure = lines(out)
    assert message["message"] == f"token rejected: {REDACTED}"
    assert REDACTED in str(failure["error"]) and "RuntimeError" in str(failure["error"])
    logger.info("a short word stays")  # values under 6 characters are never scrubbed
    assert lines(out)[-1]["message"] == "a short word stays"
