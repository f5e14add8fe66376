"""Reading `/metrics` and `/readyz` of a running bot: every sample by its name and labels,
and a wait for the store's summary to show something."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from tests.support.waiting import eventually


async def samples(http: aiohttp.ClientSession, bot_url: str) -> dict[str, float]:
    """Each sample keyed `name` or `name{label="value",...}` (labels sorted)."""
    async with http.get(f"{bot_url}/metrics") as response:
        assert response.status == 200
        body = await response.text()
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            labels = ",".join(f'{key}="{val}"' for key, val in sorted(sample.labels.items()))
            found[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return found


async def summarized(
    http: aiohttp.ClientSession, bot_url: str, holds: Callable[[dict[str, Any]], bool]
) -> None:
    """Wait until `/readyz`'s body shows what `holds` asks: the store's counts there (and in
    `/metrics`) come from a summary refreshed in the background, not from the request."""

    async def shown() -> bool:
        async with http.get(f"{bot_url}/readyz") as response:
            return holds(await response.json())

    await eventually(shown, what="the store's summary in /readyz")
