"""A serving bot keeps what startup made out of the collector's full scans (bot/app/heap.py)."""

from __future__ import annotations

import gc

from tests.support.stack import StackFactory


async def test_a_ready_bot_has_frozen_its_startup_heap(make_stack: StackFactory) -> None:
    gc.unfreeze()
    stack = await make_stack("ws")
    assert gc.get_freeze_count() > 0
    status, _ = await stack.api("GET", "/readyz")
    assert status == 200
