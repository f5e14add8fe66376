"""What startup made stays out of the collector's full scans while the server runs."""

from __future__ import annotations

import gc

from bot.app.heap import startup_heap_frozen


def _scanned(thing: object) -> bool:
    """Is `thing` in a generation a collection walks (the permanent one is not)?"""
    return any(tracked is thing for tracked in gc.get_objects())


def test_objects_alive_at_startup_are_frozen_until_the_server_stops() -> None:
    gc.unfreeze()
    made_at_startup = {"made": ["at startup"]}
    with startup_heap_frozen():
        assert gc.get_freeze_count() > 0
        assert not _scanned(made_at_startup)
        made_while_serving = {"made": ["while serving"]}
        assert _scanned(made_while_serving)
    assert gc.get_freeze_count() == 0, "a second run in this process starts unfrozen"
    assert _scanned(made_at_startup)
