"""Logging: text or JSON lines (COUNTERSIGN_LOG_FORMAT=json), each record carrying the
operation it is about, and every configured secret value scrubbed before it is written.
COUNTERSIGN_LOG_LEVEL=debug shows countersign's own debug lines (a worker going idle)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from datetime import UTC, datetime

from kernel.logcontext import OPERATION

FORMAT_ENV = "COUNTERSIGN_LOG_FORMAT"
LEVEL_ENV = "COUNTERSIGN_LOG_LEVEL"  # of countersign's own loggers; libraries stay at INFO
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
REDACTED = "[redacted]"
MIN_SECRET_LEN = 6  # shorter values would scrub ordinary words


class OperationFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "operation_id", None) is None:
            record.operation_id = OPERATION.get()
        return True


class SecretFilter(logging.Filter):
    """Replaces each secret value in the rendered message (and exception text) with a mark."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = sorted(
            {s for s in secrets if len(s) >= MIN_SECRET_LEN}, key=len, reverse=True
        )

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            record.msg = self.scrub(record.getMessage())
            record.args = None
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = self.scrub(record.exc_text)
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "at": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        operation_id = getattr(record, "operation_id", None)
        if operation_id:
            line["operation_id"] = operation_id
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["error"] = record.exc_text
        return json.dumps(line, ensure_ascii=False)


def configure(fmt: str | None = None) -> None:
    """Root logging for a countersign process (text unless COUNTERSIGN_LOG_FORMAT=json)."""
    chosen = (fmt or os.environ.get(FORMAT_ENV) or "text").lower()
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if chosen == "json" else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(OperationFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    level = (os.environ.get(LEVEL_ENV) or "INFO").upper()
    if level not in logging.getLevelNamesMapping():
        raise ValueError(f"{LEVEL_ENV}={level!r}: use DEBUG, INFO, WARNING or ERROR")
    logging.getLogger("countersign").setLevel(level)
    # httpx logs every Lark request at INFO (with its URL); our own lines say what matters
    logging.getLogger("httpx").setLevel(logging.WARNING)
    # alembic logs each migration step at INFO; the store logs one line with the revision
    logging.getLogger("alembic").setLevel(logging.WARNING)


def redact(secrets: Iterable[str]) -> None:
    """From now on, no log line written by the root handlers contains any of `secrets`."""
    for handler in logging.getLogger().handlers:
        handler.addFilter(SecretFilter(secrets))
