"""Rate limits on the dashboard's writes: sign-in starts and decision posts.

Each write is a row (a sign-in's state, a post's inbox entry and, refused, its refusal), so
each is limited twice, with token buckets in memory (bot/api/auth.py's): per client address
(before anything is read) and per signed-in person (one person on many addresses). A person
clicking at human speed never meets either; a script gets a 429 page with Retry-After and
nothing written. Buckets are per process: N replicas allow N times as much, still bounded.
The client address is the connection's (an IPv6 /64 as one): behind a reverse proxy every
client shares the proxy's bucket, so set these as that proxy's limits, or limit there.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from bot.api.auth import RateLimiter, peer_key
from bot.api.dashboard_words import label
from bot.api.errors import TO_OPS, Step, html_error, request_lang

log = logging.getLogger("countersign.api")


@dataclass(frozen=True)
class Limit:
    rate_per_s: float  # refill: the sustained rate
    burst: int  # what an idle client may do at once


@dataclass(frozen=True)
class WriteLimits:
    what: str  # "sign-in starts", in the 429 page's words
    per_address: Limit
    per_person: Limit


# A person signs in a few times a day; 20 at once covers a shared office address.
SIGN_IN_STARTS = WriteLimits("sign-in starts", Limit(0.2, 20), Limit(0.1, 10))
# A person decides one operation at a time; a burst of 30 covers a queue worked through fast.
DECISION_POSTS = WriteLimits("decision posts", Limit(1.0, 60), Limit(0.5, 30))


class WebLimits:
    def __init__(self, limits: WriteLimits, clock: Callable[[], float] = time.monotonic) -> None:
        self.what = limits.what
        self._addresses = RateLimiter(
            limits.per_address.rate_per_s, limits.per_address.burst, clock=clock
        )
        self._people = RateLimiter(
            limits.per_person.rate_per_s, limits.per_person.burst, clock=clock
        )

    def by_address(self, request: web.Request) -> web.Response | None:
        """A 429 page if this client address is over its rate, else None (one taken)."""
        wait = self._addresses.take(peer_key(request.remote))
        return self._refused(request, wait, "rate.address") if wait > 0 else None

    def by_person(self, request: web.Request, open_id: str) -> web.Response | None:
        """A 429 page if this signed-in person is over their rate, else None (one taken)."""
        wait = self._people.take(open_id)
        return self._refused(request, wait, "rate.person") if wait > 0 else None

    def _refused(self, request: web.Request, wait: float, who: str) -> web.Response:
        seconds = max(1, math.ceil(wait))
        log.info("refused %s %r: 429 %s over the rate", request.method, request.path, self.what)
        # the way back: the operation a decision was posted on, and the dashboard
        page = request.path.removesuffix("/decide")
        steps = (Step("next.operation", page), TO_OPS) if page != request.path else (TO_OPS,)
        lang = request_lang(request)
        said = label(
            "rate.limited",
            lang,
            what=label(f"rate.{self.what}", lang),
            who=label(who, lang),
            seconds=str(seconds),
        )
        headers = {"Retry-After": str(seconds)}
        return html_error(429, said, headers=headers, lang=lang, steps=steps)
