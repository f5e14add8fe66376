"""Every Lark call of one app over one long-lived `httpx.AsyncClient`.

lark-oapi's async transport (`Transport.aexecute`) opens a new `httpx.AsyncClient` per request
(docs/lark-reference.md §4.4): a fresh SSL context and CA bundle, ~35 ms of CPU on the event loop, and a new
TCP (and TLS) connection every time. The SDK has no hook for a client of one's own, so this is
the same step done with ours: the SDK builds the request (its builders, `verify`, its URL and
header helpers, its JSON encoder), our pooled client sends it, and the SDK parses the answer
into its response model. Only the send differs; the bytes on the wire are the SDK's.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any, TypeVar

import httpx
from lark_oapi.core.const import UTF_8  # type: ignore[import-untyped]
from lark_oapi.core.json import JSON  # type: ignore[import-untyped]
from lark_oapi.core.model import BaseRequest, Config, RawResponse  # type: ignore[import-untyped]
from lark_oapi.core.token import verify  # type: ignore[import-untyped]

from bot.lark.sdk_check import check_http_parts

__all__ = ["LarkTransport"]

R = TypeVar("R")


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def checked_domain(domain: str) -> str:
    """The rule of the SDK's `ClientBuilder.domain` (lark_oapi/client.py `_validate_domain`),
    which lives beside the client that imports every API namespace: an https origin, or http
    on loopback; no credentials, path, query or fragment. ValueError otherwise.
    tests/bot/lark/test_namespaces.py compares the two."""
    parsed = urllib.parse.urlsplit(domain)
    plain_http_ok = parsed.scheme == "http" and (parsed.hostname or "").lower() in LOOPBACK
    if not domain or not (parsed.scheme == "https" or plain_http_ok):
        raise ValueError(f"domain must use https scheme (got {domain!r})")
    if not parsed.netloc or "@" in parsed.netloc:
        raise ValueError(f"domain must be a host without credentials (got {domain!r})")
    if parsed.path or parsed.query or parsed.fragment:
        raise ValueError(f"domain must be an origin, no path/query/fragment (got {domain!r})")
    return domain


def sdk_config(domain: str, timeout_s: float) -> Any:
    """The SDK's client config, as its builder makes it for calls with a token we pass in: no
    app credentials, so the SDK's own synchronous token fetch cannot run; a call that reached
    it would fail at once. Built here, not by `lark.Client.builder()`: that client carries
    every API namespace (bot/lark/namespaces.py)."""
    config = Config()
    config.enable_set_token = True
    config.domain = checked_domain(domain.rstrip("/"))
    config.timeout = timeout_s
    return config


class LarkTransport:
    """Sends SDK-built requests to one Lark domain over one pooled, keep-alive HTTP client.

    Built once per `LarkApi` and shared with its `TenantTokens`; `close()` closes the client.
    The per-request timeout is the SDK's (`Config.timeout`, each of connect/read/write/pool).
    """

    def __init__(self, domain: str, *, timeout_s: float) -> None:
        # the SDK's private URL and header helpers, imported here so that an SDK in which
        # they moved is refused in one line at start-up (SdkMismatch), not an ImportError
        check_http_parts()
        from lark_oapi.core.http.transport import (  # type: ignore[import-untyped]
            _build_header,
            _build_url,
        )

        self._build_url: Any = _build_url
        self._build_header: Any = _build_header
        self.config: Any = sdk_config(domain, timeout_s)
        # No cap on connections in flight, as with a client per request (a capped pool would add
        # a wait for a free connection to each call); idle ones are kept for reuse. Otherwise
        # the SDK's client defaults (trust_env: proxies and CA bundle from the environment).
        self.client = httpx.AsyncClient(
            timeout=timeout_s,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=20),
        )

    @property
    def domain(self) -> str:
        domain: str = self.config.domain
        return domain

    async def send(self, request: Any, option: Any) -> Any:
        """`Transport.aexecute` of lark-oapi 1.7, on our client: the raw response (status,
        lower-cased headers, body). httpx errors propagate (the caller names them)."""
        request_: BaseRequest = request
        if request_.files:
            # countersign sends JSON only (cards, texts, replies, reads); a file upload would
            # need a multipart body this transport does not build, so it is refused, not sent
            raise TypeError("LarkTransport sends JSON requests only; this request carries files")
        url = self._build_url(self.config.domain, request_.uri, request_.paths)
        # UA and Authorization into request.headers
        self._build_header(request_, option, self.config)
        body = None if request_.body is None else json.loads(JSON.marshal(request_.body))
        response = await self.client.request(
            str(request_.http_method.name),
            url,
            headers=request_.headers,
            params=request_.queries,
            json=body,
            timeout=self.config.timeout,
        )
        raw = RawResponse()
        raw.status_code = response.status_code
        raw.headers = dict(response.headers)
        raw.content = response.content
        return raw

    async def call(self, request: Any, option: Any, response_type: type[R]) -> R:
        """What an SDK resource's `a<verb>` does (verify, send, parse), over our client.
        A body that is not JSON raises ValueError, as the SDK's parse does."""
        verify(self.config, request, option)
        raw = await self.send(request, option)
        response = JSON.unmarshal(str(raw.content, UTF_8), response_type)
        response.raw = raw
        return response  # type: ignore[no-any-return]

    async def close(self) -> None:
        await self.client.aclose()
