"""One signed HTTP exchange with a configured service: the confirmed call (POST) or its status
(GET), to an address checked by the trust boundary's rules and pinned for the connection.

What is certain is kept apart from what is not: a refused address, a name that does not
resolve or a connection that never opened sent nothing (`NotSent`); a reset, a timeout or a
5xx after the request left may or may not have run it (`SubmissionUnknown`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network, IPv6Network
from typing import Any

import aiohttp

from workers.domains.execution import SubmissionUnknown
from workers.domains.service.receiver import FENCE_PARAM, status_signed
from workers.pinned import Resolve, pinned_session, system_resolve
from workers.targets import BadUrl, Network, parse_callback_target, refusal
from workers.webhook_signature import signature, signed_headers

IDEMPOTENCY_HEADER = "Idempotency-Key"
OPERATION_HEADER = "X-Countersign-Operation"
# the service's answer as the card and the API show it (visibly cut beyond this)
ANSWER_MAX_BYTES = 2000
REASON_MAX_CHARS = 500
# what is read of an answer at most: a service cannot fill our memory
READ_MAX_BYTES = 64 * 1024
# allow_internal: every address may be a target (a service you run yourself)
EVERYWHERE: tuple[Network, ...] = (IPv4Network("0.0.0.0/0"), IPv6Network("::/0"))


class NotSent(Exception):
    """Nothing left this process: the address was refused or never reached."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    truncated: bool  # longer than READ_MAX_BYTES

    def json(self) -> Any:
        """The answer as JSON, or None when it is not JSON."""
        if self.truncated:
            return None
        try:
            return json.loads(self.body)
        except ValueError:
            return None


def bounded(text: str, limit: int) -> str:
    """`text` within `limit` UTF-8 bytes, visibly cut (never silently)."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    cut = raw[: limit - 40].decode("utf-8", errors="ignore")
    return f"{cut}… (cut: {len(raw)} bytes in all)"


def compact(value: object) -> str:
    """A service's JSON as one short line. Not canonical_json: a service's answer may carry
    floats, which countersign refuses only in what it is asked to do, not in what it hears."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def answer_text(answer: Answer) -> str:
    """The service's answer for the card and the API: its JSON, compact, or its text."""
    found = answer.json()
    if found is not None:
        text = compact(found)
    else:
        text = answer.body.decode("utf-8", errors="replace")
        if answer.truncated:
            text += "…"
    return bounded(text, ANSWER_MAX_BYTES)


def answer_reason(answer: Answer) -> str:
    """A refusal's own words: its JSON message (or error, reason, detail), else its text."""
    found = answer.json()
    if isinstance(found, dict):
        for key in ("message", "error", "reason", "detail"):
            if isinstance(found.get(key), str) and found[key].strip():
                return bounded(found[key].strip(), REASON_MAX_CHARS)
    text = answer_text(answer)
    return bounded(text, REASON_MAX_CHARS) if text.strip() else f"HTTP {answer.status}"


@dataclass(frozen=True)
class Target:
    url: str
    allow_internal: bool
    timeout_s: float


async def _checked(target: Target, resolve: Resolve) -> list[Any]:
    """The addresses the request may go to (every one the name resolves to must pass)."""
    allowed: Sequence[Network] = EVERYWHERE if target.allow_internal else ()
    try:
        url = parse_callback_target(target.url, allowed)
    except BadUrl as error:
        raise NotSent(f"the endpoint is refused: {error.reason}") from None
    if url.address is not None:
        return [url.address]
    try:
        addresses = await resolve(url.host, url.port)
    except OSError as error:
        raise NotSent(f"{url.host} does not resolve ({error})") from None
    for address in addresses:
        why = refusal(address, allowed)
        if why is not None:
            raise NotSent(
                f"{url.host} resolves to {why}; set allow_internal = true on the service if "
                "you run it inside"
            )
    if not addresses:
        raise NotSent(f"{url.host} resolves to no address")
    return addresses


async def exchange(
    target: Target,
    method: str,
    headers: Mapping[str, str],
    body: bytes | None,
    *,
    params: Mapping[str, str] | None = None,
    resolve: Resolve = system_resolve,
) -> Answer:
    """One request, no redirects followed. NotSent when nothing left; SubmissionUnknown when
    the request may have reached the service and its answer was lost."""
    addresses = await _checked(target, resolve)
    timeout = aiohttp.ClientTimeout(total=target.timeout_s)
    try:
        async with (
            pinned_session(addresses, timeout) as session,
            session.request(
                method,
                target.url,
                data=body,
                headers=dict(headers),
                params=dict(params or {}),
                allow_redirects=False,
            ) as response,
        ):
            raw = bytearray()  # read(n) may stop at any chunk: read to the end or the cap
            async for chunk in response.content.iter_chunked(16 * 1024):
                raw += chunk
                if len(raw) > READ_MAX_BYTES:
                    break
            body = bytes(raw[:READ_MAX_BYTES])
            return Answer(response.status, body, len(raw) > READ_MAX_BYTES)
    except aiohttp.ClientConnectorError as error:  # no connection was opened: nothing sent
        raise NotSent(f"could not connect: {error}") from None
    except (aiohttp.ClientError, TimeoutError, OSError) as error:
        raise SubmissionUnknown(
            f"{type(error).__name__} after the request left: {str(error)[:200]}"
        ) from error


def call_headers(secret: str, body: bytes, client_id: str, operation_id: str) -> dict[str, str]:
    """The confirmed call's headers: signed like a result webhook, keyed by the client id."""
    return {
        **signed_headers(secret, body, client_id, time.time()),
        IDEMPOTENCY_HEADER: client_id,
        OPERATION_HEADER: operation_id,
    }


def status_headers(
    secret: str, client_id: str, operation_id: str, *, fence: bool = False
) -> dict[str, str]:
    """A status request's headers: the signature covers the key it asks about and whether it
    asks the service to fence it (the query's fence=1)."""
    headers = call_headers(secret, b"", client_id, operation_id)
    timestamp = headers["X-Countersign-Timestamp"]
    signed = status_signed(client_id, fence=fence)
    headers["X-Countersign-Signature"] = signature(secret, timestamp, signed)
    headers.pop("Content-Type")
    return headers


def status_params(client_id: str, *, fence: bool) -> dict[str, str]:
    """A status request's query: the key, and fence=1 when countersign will not send again."""
    return {"idempotency_key": client_id, **({FENCE_PARAM: "1"} if fence else {})}
