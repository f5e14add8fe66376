"""Named crash points for the crash suite: COUNTERSIGN_CRASH_AT=<point> kills the process there.

SIGKILL, not an exception: nothing gets to clean up, exactly like a power cut or the OOM
killer. Unset (always, outside tests), a crash point costs a comparison: the variable is
read once, when the process starts (the crash suite sets it for the process it starts).
"""

from __future__ import annotations

import os
import signal

ENV = "COUNTERSIGN_CRASH_AT"
POINTS = (
    "after_claim",  # the claim committed; nothing else happened
    "after_reserve",  # the reservation is held; no attempt recorded
    "after_attempt",  # the attempt (client id) and `dispatching` are recorded; nothing sent
    "after_dispatch",  # the venue has the order; the bot has not read the response
    "after_response",  # the bot read the response; no outcome recorded
    "after_outcome",  # the outcome is recorded; the card not yet patched
)


ARMED = os.environ.get(ENV)


def crash_point(name: str) -> None:
    assert name in POINTS, name
    if ARMED == name:
        os.kill(os.getpid(), signal.SIGKILL)
