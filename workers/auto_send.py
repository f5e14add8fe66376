"""Auto-send worker: time-boxed drafts nobody decided in time are confirmed by the clock
(`store/claims/auto_send.py` decides, in one conditional write each, under `AutoRules`: the config's
policies and time boxes now)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping

from pydantic import BaseModel

from kernel.logcontext import about
from store import AutoRules, Store, auto_send_due, disarm_disallowed
from workers.domains import DOMAINS

log = logging.getLogger("countersign.auto_send")


def auto_send_rules(
    policies: Mapping[str, str], settings_of: Callable[[str], BaseModel]
) -> AutoRules:
    """The rules the clock's claims re-check: every audience's policy digest now
    (bot.config.policy.policy_digests), and the time boxes each enabled domain allows now (target
    ref -> the longest time box its drafts may ask for; most kinds allow none)."""
    limits: dict[str, int] = {}
    for kind, domain in DOMAINS.items():
        domain_settings = settings_of(kind)
        if domain.enabled(domain_settings):
            limits.update(domain.auto_send_limits(domain_settings))
    return AutoRules(policies, limits)


async def run_auto_send(
    store: Store,
    rules: AutoRules,
    interval_s: float,
    stop: asyncio.Event,
    on_claimed: Callable[[], None],
) -> None:
    """Sweep every `interval_s` until `stop`; `on_claimed` after a sweep that claimed or
    disarmed any (the executor runs them, the card worker patches their cards)."""
    while not stop.is_set():
        try:
            # cheap (indexed on auto_send_at); each sweep, so a restart's new config shows
            disarmed = await disarm_disallowed(store, rules)
            for operation_id in disarmed:
                with about(operation_id):
                    log.info("auto-send disarmed: the config no longer allows it")
            claimed = await auto_send_due(store, rules)
            for claim in claimed:
                with about(claim.operation.id):
                    log.info("nobody decided in time: sent by the clock (claim %s)", claim.claim_id)
            if claimed or disarmed:
                on_claimed()
        except Exception:
            # A transient store error must not end the sweep; the next one retries.
            log.exception("auto-send sweep failed; retrying in %.1fs", interval_s)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)
