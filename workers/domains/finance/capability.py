"""Admission against what the venue adapter could ever execute (docs/architecture.md §6).

Pure: the caller reads the adapter's `Capabilities` once per proposal. An order the adapter
can never take (an instrument it does not list, an order type, time in force or account mode
it does not support, an account it does not hold) is refused before any card exists, so no
executable Confirm button is ever shown for it. The post-claim preflight still re-checks
against a fresh observation (tick, lot, minimum, mark, budget).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kernel.problems import FieldProblem
from workers.domains.base import ReadingUnavailable
from workers.domains.finance.schema import FinanceOrderV1
from workers.domains.finance.venues.model import Capabilities


@dataclass(frozen=True)
class VenueReadings:
    """What each venue this process opened could ever execute, read for one proposal. A
    venue that could not be read holds up only the proposals on it (`of`)."""

    read: Mapping[str, Capabilities]
    failed: Mapping[str, str]  # venue -> why it could not be read

    def of(self, venue: str) -> Capabilities | None:
        """The venue's capabilities; None: no such venue is open here; ReadingUnavailable:
        it is, and could not be read now (the proposal may be retried)."""
        if venue in self.failed:
            raise ReadingUnavailable(f"venue {venue!r} could not be read: {self.failed[venue]}")
        return self.read.get(venue)

    @property
    def venues(self) -> list[str]:
        return sorted({*self.read, *self.failed})


def _listed(values: frozenset[str]) -> str:
    return ", ".join(sorted(values)) or "none"


def capability_problems(
    order: FinanceOrderV1, caps: Capabilities | VenueReadings
) -> list[FieldProblem]:
    if isinstance(caps, VenueReadings):
        found = caps.of(order.venue)
        if found is None:
            return [
                FieldProblem(
                    "payload.venue",
                    f"venue {order.venue!r} is not connected in this deployment (connected: "
                    f"{', '.join(caps.venues) or 'none'})",
                    "use an account on a connected venue, or ask an administrator to "
                    "configure this one",
                )
            ]
        caps = found
    if order.venue != caps.venue:
        return [
            FieldProblem(
                "payload.venue",
                f"this deployment's finance adapter is venue {caps.venue!r}, not {order.venue!r}",
                f'use venue "{caps.venue}" or an account on a venue that is connected here',
            )
        ]
    problems: list[FieldProblem] = []
    if order.account not in caps.accounts:
        problems.append(
            FieldProblem(
                "payload.account",
                f"venue {caps.venue!r} holds no account {order.account!r}",
                "use an account configured for countersign that the venue holds, or ask an "
                "administrator",
            )
        )
    else:
        # an adapter that does not say an account's mode fails closed: it cannot be checked
        mode = caps.modes_by_account.get(order.account, "unknown")
        if mode not in caps.account_modes:
            problems.append(
                FieldProblem(
                    "payload.account",
                    f"account {order.account!r} is in {mode!r} mode, which this adapter "
                    f"cannot trade (it supports {_listed(caps.account_modes)})",
                    "use an account in a supported mode",
                )
            )
    if order.instrument not in caps.instruments:
        problems.append(
            FieldProblem(
                "payload.instrument",
                f"venue {caps.venue!r} does not list {order.instrument!r}",
                f"use one of {_listed(caps.instruments)}",
            )
        )
    if order.order_type not in caps.order_types:
        problems.append(
            FieldProblem(
                "payload.order_type",
                f"venue {caps.venue!r} does not support {order.order_type!r} orders",
                f"use one of {_listed(caps.order_types)}",
            )
        )
    if order.time_in_force not in caps.time_in_force:
        problems.append(
            FieldProblem(
                "payload.time_in_force",
                f"venue {caps.venue!r} does not support time in force {order.time_in_force!r}",
                f"use one of {_listed(caps.time_in_force)}",
            )
        )
    if order.protective is not None and not caps.protective:
        problems.append(
            FieldProblem(
                "payload.protective",
                f"venue {caps.venue!r} cannot place protective orders",
                "leave protective out and protect the position another way",
            )
        )
    return problems
