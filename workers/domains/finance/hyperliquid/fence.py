"""Settling a request whose cloid the venue does not know: a `noop` signed with the
request's own nonce (reference/venues.md §1.7, §1.12).

- the noop is accepted: the nonce is now used, so the request can never land (NeverLanded);
- "duplicate nonce": the request landed or is landing: look again (VenueAmbiguous); once
  `expiresAfter` plus a margin has passed with the cloid still unknown, the venue refused
  the request whole before placing anything (NeverLanded);
- the noop times out or fails otherwise: still unknown (VenueAmbiguous); repeating a noop
  with the same nonce is harmless.
Never None: "not found yet" would let the executor conclude "not received" after its own
not-found delay, which may be shorter than expiresAfter while the order may still land. With
evidence, only this module settles: a state, NeverLanded, or VenueAmbiguous (ask again).
Never a second order, never a re-POST of the order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from store import World
from workers.domains.finance.hyperliquid import answers, orders
from workers.domains.finance.hyperliquid.signer import AgentKey, sign
from workers.domains.finance.hyperliquid.transport import Refused, Transport
from workers.domains.finance.hyperliquid.wire import noop_action
from workers.domains.finance.venues.contract import Evidence, NeverLanded, VenueAmbiguous
from workers.domains.finance.venues.model import VenueOrder, VenueOrderState

EXPIRY_MARGIN_MS: Final = 5_000  # the venue's clock and its indexing may trail ours
FENCED: Final = (
    "fenced: the venue accepted a no-op with the order's nonce, so the order can never land"
)
EXPIRED: Final = (
    "expiresAfter has passed and the venue holds no order with the request's cloid: it can "
    "no longer land, and it placed nothing"
)


async def settle(
    transport: Transport,
    key: AgentKey | None,
    order: VenueOrder,
    user: str,
    evidence: Evidence,
    now_ms: int,
    world: World,
) -> VenueOrderState:
    """The order's state if it turns out to have landed; VenueAmbiguous while that is still
    open; NeverLanded once it is proved it never can. `key` signs the noop; it must be the
    key that signed the request (nonces are per signer)."""
    nonce, expires_after = int(evidence["nonce"]), int(evidence["expires_after"])
    expired = now_ms > expires_after + EXPIRY_MARGIN_MS
    if key is None or key.address.lower() != str(evidence["signer"]).lower():
        if expired:
            raise NeverLanded(EXPIRED)
        raise VenueAmbiguous(
            "the request's signer is not this process's key, so its nonce cannot be fenced; "
            "it may still land until its expiresAfter passes: ask again"
        )
    signed = sign(key, noop_action(), nonce, None, transport.base_url)
    try:
        answer = await transport.exchange(signed.payload())
    except Refused as error:
        raise VenueAmbiguous(f"the noop fence was refused ({error}); ask again") from None
    if isinstance(answer, Mapping) and answer.get("status") == "ok":
        raise NeverLanded(FENCED)
    text = answers.whole_error(answer) or repr(answer)
    if "duplicate nonce" in text:  # the request landed, or is landing
        found = await orders.read_state(transport, user, order, world)
        if found is not None:
            return found
    if expired:
        raise NeverLanded(f"{EXPIRED} (the venue refused it whole)")
    if "duplicate nonce" in text:
        raise VenueAmbiguous(
            "the request's nonce is used but the venue does not show its cloid yet: it may "
            "still be landing until its expiresAfter passes; ask again"
        )
    raise VenueAmbiguous(f"the noop fence answered {text!r:.200}; ask again")
