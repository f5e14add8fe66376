"""A separate OS process that claims operations through the group-commit writer, to be killed.

Usage: python -m tests.support.groupcommit_claimer IN_FLIGHT < targets
Store from COUNTERSIGN_STORE_URL / COUNTERSIGN_STORE_SCHEMA. Reads one JSON line: a list of
[operation_id, digest]. Keeps IN_FLIGHT claims queued at once and prints
`acked <operation_id> <claim_id>` (flushed) the moment each claim's future resolves; the test
SIGKILLs it mid-stream and checks every printed claim is in the database.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import deque

from ulid import ULID

from kernel.timeutil import utc_now
from store import claim_intent, is_sqlite, open_writer


async def main(in_flight: int) -> None:
    url = os.environ["COUNTERSIGN_STORE_URL"]
    targets: deque[list[str]] = deque(json.loads(sys.stdin.readline()))
    writer = await open_writer(url, schema=os.environ.get("COUNTERSIGN_STORE_SCHEMA"))
    print("ready", flush=True)

    async def claimer() -> None:
        while targets:
            operation_id, digest = targets.popleft()
            now = utc_now()
            claim_id = str(ULID.from_datetime(now))
            intent = claim_intent(
                operation_id=operation_id,
                digest=digest,
                operator="ou_alice",
                claim_id=claim_id,
                now=now,
                sqlite=is_sqlite(url),
            )
            await writer.commit_intent(intent)
            print(f"acked {operation_id} {claim_id}", flush=True)

    try:
        await asyncio.gather(*(claimer() for _ in range(in_flight)))
    finally:
        await writer.close()
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
