"""The tenant_access_token, fetched asynchronously so the event loop never blocks.

lark-oapi's `acreate`/`apatch`/... fetch the token with a synchronous `requests` POST on a cache
miss (docs/lark-reference.md §4.4). `TenantTokens` owns the token instead: `LarkApi`'s SDK config has
`enable_set_token(True)` and the token is handed to every call. The fetch is the SDK's own
request model sent over `LarkApi`'s one HTTP client (`LarkTransport`). Lark's token semantics
(§4.5): a token lives 2 h; when less than 30 min remain the endpoint issues a new one and both
stay valid.

`LarkApiError` lives here (not in `api.py`) because both modules raise it; `bot.lark.api`
re-exports it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal

import httpx
from lark_oapi.api.auth.v3 import (  # type: ignore[import-untyped]
    InternalTenantAccessTokenRequest,
    InternalTenantAccessTokenRequestBody,
)
from lark_oapi.core.model import RequestOption  # type: ignore[import-untyped]
from lark_oapi.core.token.access_token_response import (  # type: ignore[import-untyped]
    AccessTokenResponse,
)

from bot.lark.transport import LarkTransport

log = logging.getLogger("countersign.lark.tokens")

ErrorKind = Literal["rate_limited", "token", "terminal", "transient"]

TRANSPORT_ERROR = -1  # our code for "no Lark answer": connection, timeout, unreadable body

RATE_LIMITED_CODES = frozenset({230020, 99991400})
TOKEN_CODES = frozenset({99991661, 99991663, 99991664, 99991668})
TERMINAL_CODES = frozenset(
    {
        230031,  # message older than 14 days
        230011,  # message recalled
        230110,  # message deleted
        232009,  # chat dissolved
        230027,  # no permission (e.g. another app's card)
        230002,  # bot not in the chat
        230013,  # user outside the app's availability
        230001,  # invalid parameter / unknown message
        230099,  # invalid card content (but see CARD_LOCKED_TEXT)
        230025,  # body too long
        99992402,  # field validation failed
        10003,  # token endpoint: unknown app_id
        10014,  # token endpoint: wrong app_secret
    }
)

# 230099 with sub-code 11310 and "card action is lock": a JSON 2.0 card is being interacted with
# (a click's callback not yet answered) and cannot be updated for now - transient, unlike the
# rest of 230099 and even of 11310 (also "template is not visible", "element exceeds the limit"),
# so it is recognised by its text (docs/lark-reference.md §4.3).
CARD_LOCKED_CODE = 230099
CARD_LOCKED_TEXT = "card action is lock"


class LarkApiError(Exception):
    """A Lark call that did not succeed. `code` is Lark's code, or -1 when Lark never answered.

    Messages carry Lark's `msg` and our context, never a token or the app secret.
    """

    def __init__(
        self,
        code: int,
        msg: str,
        *,
        http_status: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(code, msg)
        self.code = code
        self.msg = msg
        self.http_status = http_status
        self.retry_after_s = retry_after_s

    @property
    def kind(self) -> ErrorKind:
        if self.code in RATE_LIMITED_CODES:
            return "rate_limited"
        if self.code in TOKEN_CODES:
            return "token"
        if self.http_status is not None and self.http_status >= 500:
            return "transient"
        if self.card_locked:
            return "transient"
        if self.code in TERMINAL_CODES:
            return "terminal"
        return "transient"

    @property
    def card_locked(self) -> bool:
        """Lark refused to update a card someone is interacting with: try again shortly."""
        return self.code == CARD_LOCKED_CODE and CARD_LOCKED_TEXT in self.msg.lower()

    @property
    def retryable(self) -> bool:
        """Worth another attempt later (the `retrying` helper's rule)."""
        return self.kind in ("rate_limited", "transient")

    def __str__(self) -> str:
        status = f", HTTP {self.http_status}" if self.http_status is not None else ""
        return f"Lark {self.kind} error {self.code}{status}: {self.msg}"

    def __repr__(self) -> str:
        return (
            f"LarkApiError(code={self.code}, msg={self.msg!r}, http_status={self.http_status}, "
            f"retry_after_s={self.retry_after_s})"
        )


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from `x-ogw-ratelimit-reset`, whatever the header's case (httpx lower-cases)."""
    for name, value in (headers or {}).items():
        if name.lower() == "x-ogw-ratelimit-reset":
            try:
                seconds = float(value)
            except ValueError:
                return None
            return seconds if seconds >= 0 else None
    return None


class TenantTokens:
    """A cached tenant_access_token with single-flight refresh.

    `get()` returns the cached token until `refresh_margin_s` before it expires (by `clock`,
    counted from when the fetch started), then fetches once for all concurrent callers.
    `invalidate(token)` drops a token Lark rejected, so the next `get()` fetches. Fetches go
    over `transport` (for `domain`), or over one of its own when none is given. A fetch lasts
    at most `timeout_s` in all.
    """

    def __init__(
        self,
        app_id: str,
        app_secret: str,
        domain: str,
        *,
        transport: LarkTransport | None = None,
        refresh_margin_s: float = 600,
        clock: Callable[[], float] = time.monotonic,
        timeout_s: float = 10,
    ) -> None:
        self.app_id = app_id
        self._secret = app_secret
        self._transport = transport or LarkTransport(domain, timeout_s=timeout_s)
        self._owns_transport = transport is None
        if self._transport.domain != domain.rstrip("/"):
            raise ValueError(f"transport is for {self._transport.domain}, not {domain}")
        self._margin = refresh_margin_s
        self._clock = clock
        self._timeout_s = timeout_s
        self._token: str | None = None
        self._refresh_at = 0.0
        self._inflight: asyncio.Task[str] | None = None

    def __repr__(self) -> str:  # no secret, no token
        return f"TenantTokens(app_id={self.app_id!r}, domain={self._transport.domain!r})"

    async def get(self) -> str:
        if self._token is not None and self._clock() < self._refresh_at:
            return self._token
        task = self._inflight
        if task is None:
            task = asyncio.create_task(self._fetch(), name=f"tenant-token:{self.app_id}")
            self._inflight = task
            task.add_done_callback(self._fetch_done)
        # shield: a caller that gives up does not cancel the fetch the others wait for
        return await asyncio.shield(task)

    def invalidate(self, token: str) -> None:
        """Forget `token` if it is the cached one (a newer token is kept)."""
        if token == self._token:
            self._token = None
            self._refresh_at = 0.0
            log.info("tenant token of app %s rejected by Lark; will fetch a new one", self.app_id)

    async def close(self) -> None:
        if self._inflight is not None:
            self._inflight.cancel()
        if self._owns_transport:
            await self._transport.close()

    def _fetch_done(self, task: asyncio.Task[str]) -> None:
        if self._inflight is task:
            self._inflight = None
        if not task.cancelled():
            task.exception()  # retrieved: a failed fetch nobody awaited anymore is not "lost"

    async def _fetch(self) -> str:
        started = self._clock()
        body = (
            InternalTenantAccessTokenRequestBody.builder()
            .app_id(self.app_id)
            .app_secret(self._secret)
            .build()
        )
        request = InternalTenantAccessTokenRequest.builder().request_body(body).build()
        try:
            async with asyncio.timeout(self._timeout_s):
                raw = await self._transport.send(request, RequestOption())
        except (httpx.HTTPError, TimeoutError) as error:
            raise LarkApiError(
                TRANSPORT_ERROR,
                f"tenant token fetch for app {self.app_id} failed: {type(error).__name__} {error}",
            ) from None  # keep the request (its body holds the secret) out of the chain
        status: int = raw.status_code
        try:
            payload: Any = json.loads(raw.content)
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            raise LarkApiError(
                TRANSPORT_ERROR,
                f"tenant token endpoint answered HTTP {status} with an unreadable body",
                http_status=status,
            )
        answer = AccessTokenResponse(payload)  # the SDK's model of this answer
        code = answer.code
        if code != 0:
            raise LarkApiError(
                code if isinstance(code, int) else TRANSPORT_ERROR,
                f"tenant token fetch for app {self.app_id}: {answer.msg or ''}",
                http_status=status,
                retry_after_s=retry_after(raw.headers),
            )
        token = answer.tenant_access_token
        expire = answer.expire
        if not isinstance(token, str) or not token or not isinstance(expire, int | float):
            raise LarkApiError(
                TRANSPORT_ERROR,
                "tenant token endpoint answered code 0 without a token or an expiry",
                http_status=status,
            )
        # Never refresh later than half-way through the token's life, so a margin larger than
        # what Lark hands out cannot turn every get() into a fetch.
        self._refresh_at = started + max(float(expire) - self._margin, float(expire) / 2)
        self._token = token
        log.debug("fetched tenant token for app %s, valid for %ss", self.app_id, expire)
        return token
