"""The simulated venue's error types: what a caller can catch, and what each one means.

`VenueError` is the base of what the adapter raises at a call (timeout, lost response,
closed venue, unknown account or instrument); `FaultsError` is a fault specification that
cannot be parsed (a `ValueError`, so settings validation reports it); `VenueStoreError` is
the venue's file refusing to open or to run (closed, not WAL, a newer schema).
"""

from __future__ import annotations

from collections.abc import Sequence

from workers.domains.finance.sim.profile import VENUE_NAME


class VenueError(Exception):
    """Base of the venue's errors."""


class VenueTimeout(VenueError):
    """The venue did not answer. With the simulated `timeout` fault nothing was stored;
    an executor cannot know that, so it treats this as unknown and reconciles by lookup."""

    def __init__(self, client_id: str) -> None:
        super().__init__(f"simulated venue timed out on {client_id!r} (fault: timeout)")
        self.client_id = client_id


class VenueResponseLost(VenueError):
    """The venue acted on the request but its answer was lost: reconcile by lookup."""

    def __init__(self, client_id: str) -> None:
        super().__init__(
            f"simulated venue response for {client_id!r} was lost after it was processed "
            "(fault: lose_response); reconcile with lookup(client_id)"
        )
        self.client_id = client_id


class VenueClosed(VenueError):
    def __init__(self) -> None:
        super().__init__("the simulated venue is closed")


class UnknownAccount(VenueError):
    def __init__(self, account: str, known: Sequence[str]) -> None:
        super().__init__(
            f"no account {account!r} on venue {VENUE_NAME!r} (known: {', '.join(known) or 'none'})"
        )
        self.account = account


class UnknownInstrument(VenueError):
    def __init__(self, instrument: str, known: Sequence[str]) -> None:
        super().__init__(
            f"no instrument {instrument!r} on venue {VENUE_NAME!r} "
            f"(known: {', '.join(known) or 'none'})"
        )
        self.instrument = instrument


class FaultsError(ValueError):
    """A fault specification that cannot be parsed; the message names the bad item."""


class VenueStoreError(RuntimeError):
    pass
