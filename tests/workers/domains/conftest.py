"""The simulated venue the domain tests run against: a real one, in its own file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from workers.domains.finance.sim.venue import SimVenue


@pytest.fixture
async def venue(tmp_path: Path) -> AsyncIterator[SimVenue]:
    async with await SimVenue.open(tmp_path / "venue.db") as opened:
        yield opened
