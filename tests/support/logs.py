"""Reading what a test logged."""

from __future__ import annotations

import logging

import pytest


def logged_once_without_traceback(logs: pytest.LogCaptureFixture) -> bool:
    """One log line of ours (a refusal), and no traceback or error from anyone."""
    ours = [r for r in logs.records if r.name.startswith("countersign")]
    clean = all(r.exc_info is None and r.levelno < logging.ERROR for r in logs.records)
    return len(ours) == 1 and clean
