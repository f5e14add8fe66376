"""The Python client of countersign's HTTP API: `Client` (async) and `SyncClient` (blocking).

Used by the CLI, the MCP server (bot/agents/mcp/) and any service that proposes operations.
The HTTP is aiohttp's (one session per client), or with `stdlib=True` the standard library's
in a thread: the CLI's choice, one call per process, where importing aiohttp (its SSL
contexts are built at import) costs more CPU than the call.
Results are the API's own typed shapes (bot/api/wire.py); a refusal is `ApiError` with the
API's `{code, message, fields}`. Safe to retry, so it retries: a 429 or 503 after the
`Retry-After` the API sent (capped), a dropped connection after a short backoff. A proposal
is idempotent by its request_id, and one without a request_id gets a deterministic one made
from its content (`request_id_for`), so a retried propose never files twice.

    async with Client("http://127.0.0.1:8080", token) as api:
        filed = await api.propose({"kind": kind, "payload": {...}, "audience": "ops"})
        done = await api.wait(filed.operation.id, until="final", timeout_s=600)
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from bot.api.wire import MAX_WAIT_S, CheckView, OperationPage, ProposedView
from store import OperationView, Until, reached

if TYPE_CHECKING:
    import aiohttp

DEFAULT_URL = "http://127.0.0.1:8080"
RETRY_STATUSES = frozenset({429, 502, 503, 504})
ATTEMPTS = 4
MAX_BACKOFF_S = 30.0
Result = TypeVar("Result")
Answer = tuple[int, str, Mapping[str, str], bytes]  # status, reason, headers, body as sent


@dataclass(frozen=True)
class ApiError(Exception):
    """The API refused (its status and `{code, message, fields}`), or could not be reached
    (status 0)."""

    status: int
    code: str
    message: str
    fields: tuple[dict[str, str], ...] = ()
    retry_after_s: float | None = field(default=None, compare=False)

    def __str__(self) -> str:
        lines = [f"{self.code}: {self.message} (HTTP {self.status})"]
        lines += [f"  {f['field']}: {f['reason']}: {f['fix']}" for f in self.fields]
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "fields": list(self.fields)}


@dataclass(frozen=True)
class Filed:
    """A proposal's answer: the operation, and whether this call filed it (False: the same
    request_id had filed it before, and this is that operation)."""

    operation: OperationView
    created: bool

    @property
    def supersedes(self) -> list[str]:
        """The open drafts its filing superseded (one open draft per destination)."""
        return self.operation.supersedes if isinstance(self.operation, ProposedView) else []

    @property
    def supersedes_note(self) -> str | None:
        """What superseding them did, in a sentence (None: nothing was superseded)."""
        return self.operation.supersedes_note if isinstance(self.operation, ProposedView) else None


def request_id_for(proposal: Mapping[str, Any]) -> str:
    """A request_id made from the proposal's content: the same content, the same id."""
    content = {key: value for key, value in proposal.items() if key != "request_id"}
    # plain sorted JSON, not the store's canonical form: that refuses floats, and a proposal
    # with one must still reach the API, which names the field
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "req-" + hashlib.sha256(text.encode()).hexdigest()[:32]


def _body(proposal: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    body = (
        proposal.model_dump(mode="json", exclude_unset=True)
        if isinstance(proposal, BaseModel)
        else dict(proposal)
    )
    if not body.get("request_id"):
        body["request_id"] = request_id_for(body)
    return body


async def off_loop(call: Callable[[], Answer]) -> Answer:
    """`call()` in a daemon thread of its own, awaited. Not `asyncio.to_thread`: the loop's
    executor is joined when `asyncio.run` ends, so a Ctrl-C during a long poll would wait
    out the request it abandoned; a daemon thread is left to the process's exit."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Answer] = loop.create_future()

    def settle(result: Answer | None, error: BaseException | None) -> None:
        if done.done():  # the awaiting task was cancelled meanwhile
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        try:
            result, error = call(), None
        except Exception as failed:
            result, error = None, failed
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=run, name="countersign-http", daemon=True).start()
    return await done


def _retryable(error: BaseException) -> bool:
    return isinstance(error, ApiError) and (error.status == 0 or error.status in RETRY_STATUSES)


def _backoff(state: RetryCallState) -> float:
    """What the API asked (Retry-After), else 0.5 s doubling; never above MAX_BACKOFF_S."""
    error = state.outcome.exception() if state.outcome else None
    asked = error.retry_after_s if isinstance(error, ApiError) else None
    if asked is not None:
        return min(asked, MAX_BACKOFF_S)
    doubled: float = 0.5 * 2.0 ** (state.attempt_number - 1)
    return min(doubled, MAX_BACKOFF_S)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    try:
        return max(0.0, float(headers["Retry-After"]))
    except (KeyError, ValueError):
        return None


class Client:
    """The async client; one aiohttp session per client, opened on first use."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        token: str | None = None,
        *,
        timeout_s: float = 90.0,
        attempts: int = ATTEMPTS,
        stdlib: bool = False,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._timeout_s = timeout_s
        self._attempts = attempts
        self._stdlib = stdlib
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # -- the API --------------------------------------------------------------------------

    async def propose(self, proposal: BaseModel | Mapping[str, Any]) -> Filed:
        """File a proposal (a `bot.api.intake.ProposalIn`, or the same as a mapping)."""
        return await self.propose_json(json.dumps(_body(proposal)).encode())

    async def propose_json(self, raw: bytes) -> Filed:
        """File a proposal given as JSON text, sent as it is (the API judges every number
        and key as written); give it a request_id, or a retry may file it twice."""
        status, body = await self._call("POST", "/api/v1/operations", data=raw)
        return Filed(ProposedView.model_validate(body), created=status == 201)

    async def check(self, proposal: BaseModel | Mapping[str, Any]) -> CheckView:
        """Whether `propose` would take it, nothing filed; ApiError names what would not."""
        raw = json.dumps(_body(proposal)).encode()
        _status, body = await self._call("POST", "/api/v1/operations/check", data=raw)
        return CheckView.model_validate(body)

    async def get(
        self, operation_id: str, *, wait_s: int | None = None, until: Until | None = None
    ) -> OperationView:
        """The operation; with `wait_s` (<= 60), once it is what `until` asks (the API's
        default: changed) or as it stands after that many seconds."""
        params = {
            key: str(value)
            for key, value in (("wait_s", wait_s), ("until", until))
            if value is not None
        }
        _status, body = await self._call("GET", f"/api/v1/operations/{operation_id}", params=params)
        return OperationView.model_validate(body)

    async def wait(
        self, operation_id: str, *, until: Until = "final", timeout_s: float = 300.0
    ) -> OperationView:
        """The operation as soon as it is `until` (decided, or final: an outcome that will
        not move), or as it stands after `timeout_s`: long polls of at most 60 s, each asking
        for the same condition, so nothing is missed between two."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            window = min(MAX_WAIT_S, max(0, math.ceil(deadline - loop.time())))
            view = await self.get(operation_id, wait_s=window, until=until)
            if reached(view, until) or loop.time() >= deadline:
                return view

    async def list(
        self, *, state: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> OperationPage:
        """This proposer's operations, newest first, a page at a time."""
        params = {
            key: str(value)
            for key, value in (("state", state), ("limit", limit), ("cursor", cursor))
            if value is not None
        }
        _status, body = await self._call("GET", "/api/v1/operations", params=params)
        return OperationPage.model_validate(body)

    async def cancel(self, operation_id: str) -> OperationView:
        _status, body = await self._call("POST", f"/api/v1/operations/{operation_id}/cancel")
        return OperationView.model_validate(body)

    async def ready(self) -> tuple[int, Any]:
        """GET /readyz (no token needed): its status and body, 503 included."""
        return await self._call("GET", "/readyz", refused_ok=True)

    # -- the wire -------------------------------------------------------------------------

    async def _call(
        self,
        method: str,
        path: str,
        *,
        data: bytes | None = None,
        params: dict[str, str] | None = None,
        refused_ok: bool = False,
    ) -> tuple[int, Any]:
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self._attempts),
            wait=_backoff,
            retry=retry_if_exception(_retryable),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._once(method, path, data, params, refused_ok)
        raise AssertionError("unreachable: tenacity re-raises the last error")

    async def _once(
        self,
        method: str,
        path: str,
        data: bytes | None,
        params: dict[str, str] | None,
        refused_ok: bool,
    ) -> tuple[int, Any]:
        headers = dict(self._headers)
        if data is not None:
            headers["Content-Type"] = "application/json"
        send = self._urllib if self._stdlib else self._aiohttp
        url = self.base_url + path + (f"?{urllib.parse.urlencode(params)}" if params else "")
        try:
            status, reason, answer_headers, raw = await send(method, url, data, headers)
            body = json.loads(raw) if raw.strip() else None
        except (OSError, TimeoutError) as error:  # aiohttp's connection errors are OSErrors
            why = type(error).__name__ if isinstance(error, TimeoutError) else str(error)
            raise ApiError(0, "unreachable", f"cannot reach {self.base_url} ({why})") from None
        except ValueError:
            raise ApiError(0, "bad_response", f"{self.base_url} did not answer with JSON") from None
        if status >= 400 and not refused_ok:
            detail = (body or {}).get("error", {}) if isinstance(body, dict) else {}
            raise ApiError(
                status,
                str(detail.get("code", "http_error")),
                str(detail.get("message", reason)),
                tuple(detail.get("fields", ())),
                _retry_after(answer_headers),
            )
        return status, body

    async def _aiohttp(
        self, method: str, url: str, data: bytes | None, headers: dict[str, str]
    ) -> Answer:
        import aiohttp  # here: a stdlib client never loads it

        if self._session is None:
            timeout = aiohttp.ClientTimeout(total=self._timeout_s)
            self._session = aiohttp.ClientSession(timeout=timeout)
        try:
            async with self._session.request(method, url, data=data, headers=headers) as response:
                raw = await response.read()
        except aiohttp.ClientConnectionError as error:
            raise ConnectionError(str(error)) from None
        return response.status, str(response.reason), response.headers, raw

    async def _urllib(
        self, method: str, url: str, data: bytes | None, headers: dict[str, str]
    ) -> Answer:
        request = urllib.request.Request(url, data=data, headers=headers, method=method)

        def send() -> Answer:
            # header names as _retry_after reads them (aiohttp's headers ignore case)
            try:
                with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                    named = {name.title(): value for name, value in response.headers.items()}
                    return response.status, response.reason, named, response.read()
            except urllib.error.HTTPError as refused:  # a 4xx/5xx answer: still the API's
                with refused:
                    named = {name.title(): value for name, value in refused.headers.items()}
                    return refused.code, str(refused.reason), named, refused.read()
            except urllib.error.URLError as error:
                raise ConnectionError(str(error.reason)) from None

        return await off_loop(send)


class SyncClient:
    """`Client` for code without an event loop: each call runs on the client's own loop
    (so not from inside a running one). Close it, or use it as a context manager."""

    def __init__(self, base_url: str = DEFAULT_URL, token: str | None = None, **options: Any):
        self._loop = asyncio.new_event_loop()
        self._client = Client(base_url, token, **options)

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        if not self._loop.is_closed():
            self._run(self._client.close())
            self._loop.close()

    def _run(self, call: Coroutine[Any, Any, Result]) -> Result:
        return self._loop.run_until_complete(call)

    def propose(self, proposal: BaseModel | Mapping[str, Any]) -> Filed:
        return self._run(self._client.propose(proposal))

    def check(self, proposal: BaseModel | Mapping[str, Any]) -> CheckView:
        return self._run(self._client.check(proposal))

    def get(self, operation_id: str) -> OperationView:
        return self._run(self._client.get(operation_id))

    def wait(
        self, operation_id: str, *, until: Until = "final", timeout_s: float = 300.0
    ) -> OperationView:
        return self._run(self._client.wait(operation_id, until=until, timeout_s=timeout_s))

    def list(
        self, *, state: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> OperationPage:
        return self._run(self._client.list(state=state, limit=limit, cursor=cursor))

    def cancel(self, operation_id: str) -> OperationView:
        return self._run(self._client.cancel(operation_id))
