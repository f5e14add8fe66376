"""What startup made stays out of the collector's full scans while the server runs."""

from __future__ import annotations

import gc

from bot.heap import startup_heap_frozen


def test_objects_alive_at_startup_are_frozen_until_the_server_stops() -> None:
    gc.unfreeze()
    alive_at_startup = len(gc.get_objects())
    with startup_heap_frozen():
        # everything alive then is in the permanent generation, which collections skip
        assert gc.get_freeze_count() >= alive_at_startup * 0.9
        assert len(gc.get_objects(generation=2)) < alive_at_startup * 0.1
    assert gc.get_freeze_count() == 0, "a second run in this process starts unfrozen"
