"""Reading `/metrics` of a running bot: every sample, by its name and labels."""

from __future__ import annotations

import aiohttp
from prometheus_client.parser import text_string_to_metric_families


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
