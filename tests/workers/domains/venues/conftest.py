"""The harness the conformance suite runs on, once per venue (tests/support/venue_harness.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.venue_harness import HARNESSES, VenueHarness, open_harness


@pytest.fixture(params=list(HARNESSES))
async def harness(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[VenueHarness]:
    async with open_harness(str(request.param), tmp_path) as opened:
        yield opened
