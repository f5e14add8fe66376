"""The Hyperliquid side of bench/confirm_to_outcome.py: hlsandbox in this process, a funded
account with an approved agent wallet (throwaway keys, derived from fixed strings: they hold
nothing anywhere), the bot's config for it, and the venue request weight the sandbox charged
(counted where Hyperliquid counts it: per IP, per rolling minute).
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, field
from typing import Any

import eth_account
from eth_account.signers.local import LocalAccount

from hlsandbox import info
from hlsandbox.app import WEIGHTS_KEY
from hlsandbox.testing import RunningSandbox, start
from workers.domains.finance.demo import order_payload

HL_ACCOUNT = "hl-main"
HL_KEY_ENV = "BENCH_HL_AGENT_KEY"
HL_FUNDS = "100000000"
WINDOW_MS = 60_000
# a limit buy at the sandbox's BTC mark (it fills at once), at the account's leverage there
HL_ORDER: dict[str, Any] = order_payload(venue="hyperliquid", account=HL_ACCOUNT, leverage="20")


def throwaway_key(label: str) -> LocalAccount:
    key: LocalAccount = eth_account.Account.from_key(
        "0x" + hashlib.sha256(f"countersign bench {label}".encode()).hexdigest()
    )
    return key


@dataclass
class WeightLog:
    """Every weight the sandbox charged (sandbox ms, weight) and how many it refused (429)."""

    charged: list[tuple[int, int]] = field(default_factory=list)
    refused: int = 0
    kinds: list[tuple[str, int]] = field(default_factory=list)  # /info type, its weight

    def by_kind(self, mark: int) -> str:
        """The /info weight since `mark` (a `len(kinds)`) by type, heaviest first."""
        totals: dict[str, list[int]] = {}
        for kind, weight in self.kinds[mark:]:
            entry = totals.setdefault(kind, [0, 0])
            entry[0] += 1
            entry[1] += weight
        ranked = sorted(totals.items(), key=lambda item: -item[1][1])
        return ", ".join(f"{kind} {n}x={w}" for kind, (n, w) in ranked)

    def since(self, mark: int) -> tuple[int, int]:
        """(weight charged, requests refused) since `mark` (a `len(charged)`)."""
        return sum(w for _, w in self.charged[mark:]), self.refused

    def peak_per_minute(self, mark: int) -> int:
        """The most weight charged in any rolling minute since `mark`."""
        entries, peak, total, left = self.charged[mark:], 0, 0, 0
        for at, weight in entries:
            total += weight
            while entries[left][0] <= at - WINDOW_MS:
                total -= entries[left][1]
                left += 1
            peak = max(peak, total)
        return peak


@dataclass
class HlBenchVenue:
    sandbox: RunningSandbox
    account: LocalAccount
    agent: LocalAccount
    weights: WeightLog
    raised_to: int | None = None  # the sandbox's IP limit, when raised above the venue's

    @classmethod
    async def start(cls, port: int, ip_limit: int | None = None) -> HlBenchVenue:
        sandbox = await start(port)
        try:
            account, agent = throwaway_key("account"), throwaway_key("agent")
            await sandbox.add_account(account.address, HL_FUNDS)
            await sandbox.approve_agent(account.address, agent.address)
            if ip_limit is not None:
                await sandbox.set_limits(ip_weight_per_min=ip_limit)
            log = count_weights(sandbox)
        except BaseException:
            await sandbox.stop()
            raise
        return cls(sandbox, account, agent, log, ip_limit)

    async def stop(self) -> None:
        await self.sandbox.stop()

    def environ(self) -> dict[str, str]:
        return {HL_KEY_ENV: self.agent.key.hex()}

    def add_to(self, settings: dict[str, Any], poll_s: float) -> dict[str, Any]:
        """`settings` (the bot's config data) with the emulator's table and the account."""
        finance = settings["domains"]["finance"]
        finance["accounts"] = [
            *finance["accounts"],
            {
                "name": HL_ACCOUNT,
                "venue": "hyperliquid",
                "budget": "1000000000",
                "address": self.account.address,
                "agent_key_env": HL_KEY_ENV,
            },
        ]
        finance["hyperliquid"] = {
            "network": "emulator",
            "url": self.sandbox.base_url,
            "poll_s": poll_s,
        }
        if self.raised_to is not None:  # the adapter paces itself to the same limit
            finance["hyperliquid"]["ip_weight_per_min"] = self.raised_to
        return settings

    async def quiet_minute(self) -> None:
        """Wait until nothing charged is left in the emulator's rolling minute, so a level
        starts with the venue's whole budget (100 orders "at once", not after a warm-up)."""
        if self.weights.charged:
            last = self.weights.charged[-1][0]
            left_ms = last + WINDOW_MS - self.sandbox.venue.now_ms()
            if left_ms > 0:
                print(f"waiting {left_ms / 1000:.0f} s for a quiet minute on the emulator")
                await asyncio.sleep(left_ms / 1000 + 0.1)  # the venue's rolling window


def count_weights(sandbox: RunningSandbox) -> WeightLog:
    """Log every charge of the sandbox's per-IP weight counter (the bench only listens)."""
    assert sandbox.app is not None
    weights = sandbox.app[WEIGHTS_KEY]
    charge = weights.charge
    log = WeightLog()

    def counting(ip: str, weight: int, now_ms: int, cap: int) -> bool:
        ok = charge(ip, weight, now_ms, cap)
        if ok:
            log.charged.append((now_ms, weight))
        else:
            log.refused += 1
        return ok

    weights.charge = counting  # type: ignore[method-assign]
    weight_of = info.weight

    def kind_weight(kind: str, answer: Any) -> int:
        weight = weight_of(kind, answer)
        log.kinds.append((kind, weight))
        return weight

    info.weight = kind_weight  # what the app charges each /info (read through the module)
    return log
