"""`HyperliquidVenue`: the `Venue` contract on Hyperliquid (or its emulator) through the
official SDK's wire, signing and request code.

Submit: once per account, `userRole` proves the agent signs for the configured address (else
its orders would land on another account than the one read). A client id the venue already
knows is never placed again. The order is checked and written as wires (`wire`), signed with
a fresh nonce and `expiresAfter`, and the evidence (nonce, expiry, action, signature, cloids,
signer, terms) is recorded and awaited BEFORE the one POST. It is never posted again.

Lookup: `orderStatus` by cloid; unknown and we hold the evidence -> the noop fence (`fence`):
a `noop` signed with the request's own nonce. No evidence -> the request never left (evidence
is recorded before the POST): NeverLanded. Never a second order.

Watch: the orders this process follows, polled every `poll_s` by `orderStatus` (fills are
read again only when a record changed), until they and their children are terminal.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from store import World
from workers.domains.finance.hyperliquid import answers, fence, observing, orders, reads
from workers.domains.finance.hyperliquid.economy import ACCOUNT_WINDOW_S, PRECISION_S, SLOW_S
from workers.domains.finance.hyperliquid.memory import Memory
from workers.domains.finance.hyperliquid.profile import ACCOUNT_MODE, PROFILE
from workers.domains.finance.hyperliquid.signer import AgentKey, NonceAllocator, sign
from workers.domains.finance.hyperliquid.transport import Refused, Transport
from workers.domains.finance.hyperliquid.wire import (
    WireRefusal,
    cancel_by_cloid_action,
    cloid_of,
    coin_of,
    order_action,
)
from workers.domains.finance.settings import HyperliquidSettings
from workers.domains.finance.sim.errors import UnknownAccount as SimUnknownAccount
from workers.domains.finance.venues.contract import (
    AccountState,
    Evidence,
    NeverLanded,
    RecordEvidence,
    Venue,
    VenueAmbiguous,
    VenueUnavailable,
)
from workers.domains.finance.venues.model import (
    Capabilities,
    Fill,
    Observation,
    Submission,
    VenueOrder,
    VenueOrderState,
)

log = logging.getLogger("countersign.venue.hyperliquid")
Clock = Callable[[], datetime]


class UnknownAccount(SimUnknownAccount):
    """An account this venue was not opened with (the runner refuses it as unknown_account)."""

    def __init__(self, account: str, known: Collection[str]) -> None:
        Exception.__init__(
            self,
            f"no account {account!r} on venue 'hyperliquid' (known: "
            f"{', '.join(sorted(known)) or 'none'})",
        )
        self.account = account


@dataclass(frozen=True)
class HlAccount:
    """A configured account: its name, the address every read names, its agent key."""

    name: str
    address: str
    key: AgentKey


class HyperliquidVenue(Venue):
    def __init__(
        self,
        settings: HyperliquidSettings,
        accounts: Mapping[str, HlAccount],
        transport: Transport,
        clock: Clock,
        world: World,
    ) -> None:
        self.profile = PROFILE
        self.world = world
        self._settings = settings
        self._accounts = dict(accounts)
        self._transport = transport
        self._clock = clock
        self._nonces = NonceAllocator(self._now_ms)
        self._memory = Memory()
        self._last_poll: float | None = None
        self._signs_for_account: set[str] = set()  # accounts whose agent was checked

    def _now_ms(self) -> int:
        return int(self._clock().timestamp() * 1000)

    def _account(self, name: str) -> HlAccount:
        account = self._accounts.get(name)
        if account is None:
            raise UnknownAccount(name, self._accounts)
        return account

    def _rejected(self, order: VenueOrder, reason: str) -> Submission:
        """Refused before anything was signed or sent."""
        now = self._clock()
        placed = [answers.Placed("refused", text=reason)] * len(answers.terms_of(order))
        state = orders.from_answer(order, placed, self.world, now)
        return Submission(order=state, created=True)

    # -- reads ------------------------------------------------------------------------------
    async def capabilities(self) -> Capabilities:
        # precision a minute old is enough here (preflight reads it fresh again)
        market = await reads.market(self._transport, meta_age=SLOW_S, marks_age=ACCOUNT_WINDOW_S)
        return Capabilities(
            venue=self.name,
            world=self.world,
            accounts=frozenset(self._accounts),
            account_modes=self.profile.account_modes,
            instruments=frozenset(market.assets),
            order_types=self.profile.order_types,
            time_in_force=self.profile.time_in_force,
            protective=True,
            modes_by_account=dict.fromkeys(self._accounts, ACCOUNT_MODE),
            marks=market.marks,
        )

    async def observe(
        self,
        account: str,
        instruments: Collection[str] | None = None,
        *,
        max_age: timedelta | None = None,
    ) -> Observation:
        """`max_age` None: fresh for preflight; a filing pre-check may take a minute."""
        user = self._account(account).address
        slow = None if max_age is None else min(SLOW_S, max_age.total_seconds())
        precision_age = PRECISION_S if slow is None else max(0.0, slow)
        return await observing.observation(
            self._transport,
            self.name,
            self.world,
            account,
            user,
            self._memory.cloids(),
            self._clock,
            instruments,
            precision_age,
        )

    async def account_state(self, account: str) -> AccountState:
        config = self._account(account)
        return await reads.account_state(
            self._transport,
            self.name,
            self.world,
            account,
            config.address,
            config.key.address,
            self._memory.cloids(),
        )

    # -- submit -----------------------------------------------------------------------------
    async def submit(self, order: VenueOrder, record: RecordEvidence) -> Submission:
        try:
            account = self._account(order.account)
        except UnknownAccount as error:
            return self._rejected(order, str(error.args[0]))
        if coin_of(order.instrument) is None:
            return self._rejected(
                order,
                f"instrument {order.instrument} is not a Hyperliquid "
                "perp this adapter trades (COIN-PERP; no HIP-3 markets)",
            )
        if account.name not in self._signs_for_account:  # once per account and process
            refusal = reads.signs_for_refusal(
                account.key.address,
                await reads.signs_for(self._transport, account.key.address),
                account.address,
            )
            if refusal is not None:
                return self._rejected(
                    order, f"identity mismatch, not an order rejection: {refusal}"
                )
            self._signs_for_account.add(account.name)
        # a client id the venue already knows is never placed again
        known = await orders.read_state(self._transport, account.address, order, self.world)
        if known is not None:
            held = await orders.order_record(self._transport, account.address, order.client_id)
            self._memory.follow(order, account.address, known)
            matches = held is not None and orders.same_terms(held, order)
            return Submission(order=known, created=False, matches=matches)
        # the wire: precision as fresh as preflight's; a market price: the last second's mark
        market = await reads.market(
            self._transport, meta_age=PRECISION_S, marks_age=ACCOUNT_WINDOW_S
        )
        asset = market.assets.get(order.instrument)
        if asset is None:
            return self._rejected(
                order, f"instrument {order.instrument} is not listed on Hyperliquid now"
            )
        try:
            price = None
            if order.order_type == "market":
                price = reads.market_price(order, asset, market)
            built = order_action(order, asset, price)
        except WireRefusal as error:
            return self._rejected(order, f"refused before sending: {error}")
        nonce = self._nonces.next(account.key.address)
        expires_after = self._now_ms() + self._settings.expires_after_s * 1000
        signed = sign(account.key, built.action, nonce, expires_after, self._transport.base_url)
        evidence = {
            "nonce": nonce,
            "expires_after": expires_after,
            "action": built.action,
            "signature": signed.signature,
            "cloids": built.cloids,
            "signer": signed.signer,
            "user": account.address,
            "account": account.name,
            "order": answers.order_json(order),
        }
        await record(order.client_id, evidence)  # durable before the request leaves
        self._memory.follow(order, account.address, None, lands_until_ms=expires_after)
        try:
            answer = await self._transport.exchange(signed.payload())
        except Refused as error:
            self._memory.forget(order.client_id)
            return self._rejected(order, f"the venue refused the request: {error}")
        if self.after_commit is not None:
            self.after_commit(order.client_id)
        return Submission(order=await self._answered(order, account, answer), created=True)

    async def _answered(
        self, order: VenueOrder, account: HlAccount, answer: Any
    ) -> VenueOrderState:
        error = answers.whole_error(answer)
        if error is not None:
            if answers.nonce_or_expiry(error):
                # another delivery of this very request may have landed: not decisive
                raise VenueAmbiguous(f"the venue answered {error!r}; reconcile by the cloid")
            if not answers.identity_mismatch(error):
                error = f"rejected by the venue: {error}"
            else:
                error = (
                    f"identity mismatch, not an order rejection: the venue does not recognise "
                    f"the signing agent wallet {account.key.address} for {account.address} "
                    f"(a wrong key or an agent not approved for the account): {error}"
                )
            state = self._rejected(order, error).order
            self._memory.forget(order.client_id)
            return state
        try:
            statuses = answers.placed(answer, len(answers.terms_of(order)))
        except answers.Unreadable as unreadable:
            raise VenueAmbiguous(
                f"the venue's answer could not be read ({unreadable}); reconcile by the cloid"
            ) from None
        state = orders.from_answer(order, statuses, self.world, self._clock())
        if statuses[0].kind != "error":  # the fills, their fees and the children, read now
            try:
                read = await orders.read_state(self._transport, account.address, order, self.world)
            except (VenueUnavailable, answers.Unreadable):
                read = None  # the answer said enough; watch() reads the rest
            state = read or state
        self._memory.follow(order, account.address, state)
        return state

    # -- lookup -----------------------------------------------------------------------------
    async def lookup(self, client_id: str, evidence: Evidence | None) -> VenueOrderState | None:
        try:
            return await self._lookup(client_id, evidence)
        except NeverLanded:
            self._memory.forget(client_id)  # settled: nothing to follow
            raise

    async def _lookup(self, client_id: str, evidence: Evidence | None) -> VenueOrderState | None:
        if evidence is None:
            return await self._lookup_unrecorded(client_id)
        order = answers.order_from_json(evidence["order"])
        user = str(evidence["user"])
        found = await orders.read_state(self._transport, user, order, self.world)
        if found is not None:
            self._memory.follow(order, user, found)
            return found
        account = self._accounts.get(order.account)
        key = account.key if account is not None else None
        found = await fence.settle(
            self._transport, key, order, user, evidence, self._now_ms(), self.world
        )
        self._memory.follow(order, user, found)
        return found

    async def _lookup_unrecorded(self, client_id: str) -> VenueOrderState | None:
        for account in self._accounts.values():
            order = await orders.order_from_venue(
                self._transport, account.name, account.address, client_id
            )
            if order is not None:  # cannot happen if evidence is recorded first: the
                # venue's record is the truth all the same (never "unknown" for ever)
                log.warning("%s is at the venue but no evidence was recorded for it", client_id)
                found = await orders.read_state(self._transport, account.address, order, self.world)
                if found is not None:
                    self._memory.follow(order, account.address, found)
                    return found
        raise NeverLanded(
            "no evidence was recorded for this attempt, and evidence is "
            "recorded before the request is sent: the request never left"
        )

    # -- follow, cancel, fills --------------------------------------------------------------
    async def watch(self) -> Sequence[str]:
        now = time.monotonic()
        if self._last_poll is not None and now - self._last_poll < self._settings.poll_s:
            return ()
        self._last_poll = now
        changed = []
        for client_id, followed in list(self._memory.following.items()):
            previous = None
            if followed.key is not None and followed.last is not None:
                previous = (followed.key, followed.last)
            try:
                polled = await orders.poll_state(
                    self._transport, followed.user, followed.order, self.world, previous
                )
            except (VenueUnavailable, answers.Unreadable) as error:
                log.warning("following %s: %s; trying again next round", client_id, error)
                continue
            if polled is None and followed.lands_until_ms is not None:
                if self._now_ms() > followed.lands_until_ms + fence.EXPIRY_MARGIN_MS:
                    self._memory.forget(client_id)  # it can no longer land: lookup settles it
            elif polled is not None and self._memory.follow(
                followed.order, followed.user, polled[1], polled[0]
            ):
                changed.append(client_id)
        return changed

    async def _state_of(self, client_id: str) -> tuple[VenueOrderState, str] | None:
        located = await orders.locate(
            self._transport,
            self._memory,
            [(a.name, a.address) for a in self._accounts.values()],
            client_id,
        )
        if located is None:
            return None
        order, user = located
        state = await orders.read_state(self._transport, user, order, self.world)
        if state is None:
            return None
        if state.client_id == client_id:
            return state, user
        child = next((c for c in state.children if c.client_id == client_id), None)
        return (child, user) if child is not None else None

    async def cancel(self, client_id: str) -> VenueOrderState | None:
        located = await self._state_of(client_id)
        if located is None:
            return None
        state, user = located
        if state.terminal:
            return state
        account = next(a for a in self._accounts.values() if a.address == user)
        market = await reads.market(self._transport, meta_age=PRECISION_S)
        asset = market.assets[state.instrument]
        nonce = self._nonces.next(account.key.address)
        expires_after = self._now_ms() + self._settings.expires_after_s * 1000
        signed = sign(
            account.key,
            cancel_by_cloid_action(asset, [cloid_of(client_id)]),
            nonce,
            expires_after,
            self._transport.base_url,
        )
        try:
            answer = await self._transport.exchange(signed.payload())
        except Refused as error:
            raise VenueAmbiguous(f"the cancel was refused ({error})") from None
        if (refused := answers.whole_error(answer)) is not None:
            log.warning("cancel of %s refused by the venue: %s", client_id, refused)
        after = await self._state_of(client_id)
        return after[0] if after is not None else None

    async def fills(self, client_id: str) -> tuple[Fill, ...]:
        located = await self._state_of(client_id)
        return located[0].fills if located is not None else ()

    async def close(self) -> None:
        await self._transport.close()
