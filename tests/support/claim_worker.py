"""A separate OS process that races confirm_and_claim on one operation.

Usage: python -m tests.support.claim_worker OPERATION_ID DIGEST COUNT
Store from COUNTERSIGN_STORE_URL / COUNTERSIGN_STORE_SCHEMA. Prints `ready`, waits for a
line on stdin, fires COUNT concurrent claims on separate connections, prints JSON results.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from store import Claimed, Click, open_store


async def main(operation_id: str, digest: str, count: int) -> None:
    store = await open_store(
        os.environ["COUNTERSIGN_STORE_URL"],
        schema=os.environ.get("COUNTERSIGN_STORE_SCHEMA"),
        pool_size=count,
    )
    try:
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        results = await asyncio.gather(
            *[
                store.confirm_and_claim(
                    Click(
                        operation_id, "confirm", digest, "ou_alice", event_id=f"{os.getpid()}-{i}"
                    )
                )
                for i in range(count)
            ]
        )
        print(
            json.dumps(
                [
                    "claimed" if isinstance(result, Claimed) else result.reason.value
                    for result in results
                ]
            ),
            flush=True,
        )
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
