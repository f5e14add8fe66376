"""Paging through operations: a `Page`, its opaque cursor (`encode_cursor`, `decode_cursor`,
keyed by (created_at, id)), `InvalidCursor` for one we did not issue, and `MAX_PAGE_SIZE`."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from datetime import datetime

from kernel.timeutil import iso_utc, parse_iso_utc
from store.authority.records import Operation

MAX_PAGE_SIZE = 50


class InvalidCursor(ValueError):
    pass


@dataclass(frozen=True)
class Page:
    items: tuple[Operation, ...]
    next_cursor: str | None
    has_more: bool
    # a filtered page that stopped at its window, not at its size: it looked through every
    # operation created from the cursor back to this time (next_cursor goes on from there)
    searched_to: datetime | None = None


_ISSUED_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")  # what a cursor may name: ids we made


def encode_cursor(created_at: datetime, operation_id: str) -> str:
    raw = f"{iso_utc(created_at)}|{operation_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        stamp, operation_id = raw.split("|", 1)
        if not _ISSUED_ID.fullmatch(operation_id):  # e.g. a NUL, which PostgreSQL refuses
            raise ValueError(operation_id)
        return parse_iso_utc(stamp), operation_id
    except (ValueError, OverflowError, binascii.Error, UnicodeDecodeError):
        # OverflowError: a timestamp at the edge of the calendar moved into UTC
        raise InvalidCursor(
            "cursor is not one this API issued; pass next_cursor verbatim"
        ) from None
