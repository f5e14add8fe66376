"""LarkApi and TenantTokens against the real sandbox (and, for gateway failures, a stub server).

Every test here runs with the SDK's synchronous paths booby-trapped (`no_sync_http`): a blocking
`requests` call or the SDK's own token fetch would fail the test instead of blocking the loop.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import httpx
import pytest
import requests
from aiohttp import web
from aiohttp.test_utils import TestServer
from aiohttp.typedefs import Middleware
from lark_oapi.core.http import Transport  # type: ignore[import-untyped]
from lark_oapi.core.token.manager import TokenManager  # type: ignore[import-untyped]

from bot.lark.api import LarkApi, LarkApiError, retrying
from bot.lark.tokens import TenantTokens
from bot.lark.transport import LarkTransport
from larksandbox import (
    DEFAULT_APP_ID,
    HUB_KEY,
    App,
    Handler,
    SandboxOptions,
    build_sandbox,
    default_state,
)
from tests.support.sandbox import Sandbox, v2_card

DAY_S = 86400


@pytest.fixture(autouse=True)
def no_sync_http(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any synchronous HTTP from the SDK (its token fetch, `Transport.execute`) fails loudly."""

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("synchronous HTTP on the event loop")

    TokenManager.cache.cache.clear()
    monkeypatch.setattr(requests.sessions.Session, "request", refuse)
    monkeypatch.setattr(TokenManager, "get_self_tenant_token", staticmethod(refuse))
    monkeypatch.setattr(Transport, "execute", staticmethod(refuse))


@pytest.fixture
async def api(sandbox: Sandbox) -> AsyncIterator[LarkApi]:
    client = LarkApi(sandbox.app.app_id, sandbox.app.app_secret, sandbox.base_url, timeout_s=5)
    yield client
    await client.close()


@pytest.fixture
def lark_codes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The `code` of every message-call answer (not token fetches) received, in order."""
    codes: list[int] = []
    original = LarkTransport.call

    async def spy(self: LarkTransport, request: Any, option: Any, response_type: Any) -> Any:
        response = await original(self, request, option, response_type)
        codes.append(response.code)
        return response

    monkeypatch.setattr(LarkTransport, "call", spy)
    return codes


def counting_transport(sandbox: Sandbox) -> tuple[LarkTransport, list[str]]:
    """A transport to the sandbox that records the URL of every request it starts."""
    urls: list[str] = []

    async def on_request(request: httpx.Request) -> None:
        urls.append(str(request.url))

    transport = LarkTransport(sandbox.base_url, timeout_s=10)
    transport.client.event_hooks = {"request": [on_request]}
    return transport, urls


class Sleeps:
    """A `retrying(sleep=...)` stand-in: records each wait and runs `then` instead of sleeping."""

    def __init__(self, then: Callable[[float], Awaitable[None]] | None = None) -> None:
        self.waits: list[float] = []
        self._then = then

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        if self._then is not None:
            await self._then(seconds)


def chat_messages(sandbox: Sandbox, chat_id: str = "oc_ops") -> list[str]:
    return [m.message_id for m in sandbox.state.messages.values() if m.chat_id == chat_id]


async def freeze(sandbox: Sandbox) -> None:
    await sandbox.control("POST", "/clock", {"freeze": True})


async def advance(sandbox: Sandbox, seconds: float) -> None:
    await sandbox.control("POST", "/clock", {"advance_s": seconds})


# -- messages ---------------------------------------------------------------------------------


async def test_send_patch_reply_and_read_back(sandbox: Sandbox, api: LarkApi) -> None:
    message_id = await api.send_card("oc_ops", v2_card(), "op-1-card")
    assert message_id.startswith("om_")

    done = v2_card("Confirmed by Alice", buttons=False)
    await api.patch_card(message_id, done)

    reply_id = await api.reply_text(message_id, "确认完成 done", "op-1-reply")
    item = await api.get_message(message_id)
    assert item["message_id"] == message_id and item["chat_id"] == "oc_ops"
    assert item["msg_type"] == "interactive" and item["updated"] is True
    assert json.loads(item["body"]["content"]) == done
    assert item["sender"]["sender_type"] == "app"

    reply = await api.get_message(reply_id)
    assert reply["parent_id"] == message_id
    assert json.loads(reply["body"]["content"]) == {"text": "确认完成 done"}

    direct_id = await api.send_text("ou_alice", "hello", "op-1-dm", id_type="open_id")
    direct = await api.get_message(direct_id)
    assert direct["chat_id"].startswith("oc_p2p_") and direct["msg_type"] == "text"

    _status, view = await sandbox.control("GET", f"/messages/{message_id}")
    assert [rev["source"] for rev in view["history"]] == ["create", "patch"]


async def test_calls_never_take_the_sdks_blocking_paths(sandbox: Sandbox) -> None:
    # `no_sync_http` turns any blocking request into an AssertionError; 20 calls, 19 of them
    # concurrent, share one token fetched over aiohttp.
    transport, urls = counting_transport(sandbox)
    tokens = TenantTokens(
        sandbox.app.app_id, sandbox.app.app_secret, sandbox.base_url, transport=transport
    )
    api = LarkApi("ignored", "ignored", sandbox.base_url, tokens=tokens)
    try:
        message_id = await api.send_card("oc_ops", v2_card(), "op-2-card")
        items = await asyncio.gather(*(api.get_message(message_id) for _ in range(19)))
    finally:
        await api.close()
        await transport.close()
    assert {item["message_id"] for item in items} == {message_id}
    assert [url.rsplit("/", 1)[-1] for url in urls] == ["internal"]
    # and the SDK config holds no credentials, so its own fetch could not even start
    assert api.transport.config.app_secret is None


@dataclass
class LostAnswers:
    """How long the sandbox holds each message-create answer *after* the message exists."""

    delay_s: float = 0.0


@asynccontextmanager
async def sandbox_with(middleware: Middleware) -> AsyncIterator[Sandbox]:
    """The real sandbox with one more middleware in front (it cannot be added once started)."""
    state = default_state()
    app = build_sandbox(state, SandboxOptions(callback_timeout_s=1.0))
    app.middlewares.append(middleware)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    async with aiohttp.ClientSession() as http:
        yield Sandbox(f"http://127.0.0.1:{server.port}", state, app[HUB_KEY], http)
    await server.close()


@pytest.fixture
async def slow_answer_sandbox() -> AsyncIterator[tuple[Sandbox, LostAnswers]]:
    """The sandbox, with message-create answers delayed after the message was created: what a
    client sees when Lark accepted a send but the answer was slow or lost.

    The sandbox's own `latency_ms` fault cannot model this: it sleeps before the request body is
    read, and the test server cancels the handler (or the body read fails) once the client has
    hung up, so a send that timed out on our side never lands.
    """
    lost = LostAnswers()

    @web.middleware
    async def hold_answer(request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await handler(request)
        if request.method == "POST" and request.path == "/open-apis/im/v1/messages":
            await asyncio.sleep(lost.delay_s)
        return response

    async with sandbox_with(hold_answer) as sandbox:
        yield sandbox, lost


async def test_uuid_makes_a_retried_send_post_once(
    slow_answer_sandbox: tuple[Sandbox, LostAnswers],
) -> None:
    """The first attempt times out on our side after Lark accepted it; the retry, with the same
    uuid, gets the same message back and the chat has exactly one card."""
    sandbox, lost = slow_answer_sandbox
    api = LarkApi(sandbox.app.app_id, sandbox.app.app_secret, sandbox.base_url, timeout_s=0.25)
    await api.tokens.get()  # so the 0.25 s budget below is the send's alone
    lost.delay_s = 5.0
    errors: list[LarkApiError] = []

    async def send() -> str:
        if errors:
            lost.delay_s = 0.0
        try:
            return await api.send_card("oc_ops", v2_card(), "op-3-card")
        except LarkApiError as error:
            errors.append(error)
            raise

    try:
        message_id = await retrying(send, attempts=3, sleep=Sleeps())
    finally:
        await api.close()
    [timeout] = errors  # one timed-out attempt, whose card Lark did post ...
    assert timeout.code == -1 and timeout.kind == "transient" and "Timeout" in timeout.msg
    assert chat_messages(sandbox) == [message_id]  # ... and the retry did not post another


# -- one HTTP client -------------------------------------------------------------------------


async def test_one_connection_serves_every_call_of_an_api() -> None:
    """Token, send, patch, reply and reads, one after another, all reach Lark over one TCP
    connection: one long-lived client with keep-alive, not a client (and a TLS context) built
    per request as the SDK's async transport does."""
    seen: list[tuple[str, str, object]] = []  # (method, path, client address and port)

    @web.middleware
    async def note_connection(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.startswith("/open-apis/"):
            peer = request.transport.get_extra_info("peername") if request.transport else None
            seen.append((request.method, request.path, peer))
        return await handler(request)

    async with sandbox_with(note_connection) as sandbox:
        api = LarkApi(sandbox.app.app_id, sandbox.app.app_secret, sandbox.base_url, timeout_s=5)
        try:
            message_id = await api.send_card("oc_ops", v2_card(), "op-12-card")
            await api.patch_card(message_id, v2_card("Confirmed", buttons=False))
            reply_id = await api.reply_text(message_id, "done", "op-12-reply")
            for read in (message_id, reply_id, message_id):
                await api.get_message(read)
        finally:
            await api.close()
    paths = [
        (method, path.rsplit("/", 1)[-1] if "/messages/" in path else path)
        for method, path, _peer in seen
    ]
    assert paths == [
        ("POST", "/open-apis/auth/v3/tenant_access_token/internal"),
        ("POST", "/open-apis/im/v1/messages"),
        ("PATCH", message_id),
        ("POST", "reply"),
        ("GET", message_id),
        ("GET", reply_id),
        ("GET", message_id),
    ]
    assert len({peer for _method, _path, peer in seen}) == 1, seen


# -- tokens -----------------------------------------------------------------------------------


async def test_an_expired_token_is_dropped_and_refetched_once(
    sandbox: Sandbox, lark_codes: list[int]
) -> None:
    transport, urls = counting_transport(sandbox)
    tokens = TenantTokens(
        sandbox.app.app_id, sandbox.app.app_secret, sandbox.base_url, transport=transport
    )
    api = LarkApi("ignored", "ignored", sandbox.base_url, tokens=tokens)
    try:
        message_id = await api.send_card("oc_ops", v2_card(), "op-4-card")
        first = await tokens.get()
        await advance(sandbox, 7201)  # the sandbox expires the token; our clock does not know
        await api.patch_card(message_id, v2_card("again"))
        second = await tokens.get()
    finally:
        await api.close()
        await transport.close()
    assert lark_codes == [0, 99991663, 0]
    assert len(urls) == 2 and first != second


async def test_token_is_reused_until_the_refresh_margin(sandbox: Sandbox) -> None:
    now = [1000.0]
    transport, urls = counting_transport(sandbox)
    tokens = TenantTokens(
        sandbox.app.app_id,
        sandbox.app.app_secret,
        sandbox.base_url,
        transport=transport,
        refresh_margin_s=600,
        clock=lambda: now[0],
    )
    try:
        first = await tokens.get()
        now[0] += 7200 - 600 - 5
        await advance(sandbox, 7200 - 600 - 5)
        assert await tokens.get() == first and len(urls) == 1
        now[0] += 10  # inside the margin; Lark (< 30 min left) hands out a new token
        await advance(sandbox, 10)
        second = await tokens.get()
        assert second != first and len(urls) == 2
        assert await tokens.get() == second and len(urls) == 2
        tokens.invalidate(first)  # stale news: the newer token stays
        assert await tokens.get() == second and len(urls) == 2
    finally:
        await transport.close()


async def test_concurrent_gets_share_one_fetch_and_a_caller_may_give_up(
    sandbox: Sandbox,
) -> None:
    transport, urls = counting_transport(sandbox)
    tokens = TenantTokens(
        sandbox.app.app_id, sandbox.app.app_secret, sandbox.base_url, transport=transport
    )
    try:
        quitter = asyncio.create_task(tokens.get())
        waiters = [asyncio.create_task(tokens.get()) for _ in range(10)]
        await asyncio.sleep(0)
        quitter.cancel()
        got = await asyncio.gather(*waiters)
    finally:
        await transport.close()
    assert len(set(got)) == 1 and got[0].startswith("t-")
    assert len(urls) == 1 and quitter.cancelled()


async def test_token_failures_are_lark_errors_without_the_secret(
    sandbox: Sandbox, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="Lark")
    secret = "s3cret-do-not-print"
    wrong = TenantTokens(sandbox.app.app_id, secret, sandbox.base_url)
    with pytest.raises(LarkApiError) as refused:
        await wrong.get()
    with pytest.raises(LarkApiError):  # a failure is not cached: the next get asks again
        await wrong.get()
    await wrong.close()
    assert refused.value.code == 10014 and refused.value.kind == "terminal"

    down = TenantTokens(sandbox.app.app_id, secret, "http://127.0.0.1:1", timeout_s=1)
    with pytest.raises(LarkApiError) as unreachable:
        await down.get()
    await down.close()
    assert unreachable.value.code == -1 and unreachable.value.kind == "transient"

    api = LarkApi(sandbox.app.app_id, sandbox.app.app_secret, sandbox.base_url)
    await api.send_card("oc_ops", v2_card(), "op-5-card")
    token = await api.tokens.get()
    await api.close()
    for error in (refused.value, unreachable.value):
        assert secret not in "".join(traceback.format_exception(error)) + repr(error)
    for text in (secret, sandbox.app.app_secret, token):
        assert text not in caplog.text
        assert text not in repr(api.tokens)
    assert DEFAULT_APP_ID in caplog.text  # the log did say something


# -- errors and retrying ----------------------------------------------------------------------


async def test_app_rate_limit_is_classified_and_retried_after_reset(
    sandbox: Sandbox, api: LarkApi
) -> None:
    await freeze(sandbox)
    await sandbox.control("POST", "/faults", {"app_rate_limit_per_s": 1})
    await api.send_card("oc_ops", v2_card(), "op-6-a")
    with pytest.raises(LarkApiError) as limited:
        await api.send_card("oc_ops", v2_card(), "op-6-b")
    error = limited.value
    assert (error.kind, error.code, error.http_status) == ("rate_limited", 99991400, 429)
    assert error.retry_after_s == 1

    sleeps = Sleeps(lambda seconds: advance(sandbox, seconds))  # time passes on Lark's clock
    calls = 0

    async def send() -> str:
        nonlocal calls
        calls += 1
        return await api.send_card("oc_ops", v2_card(), "op-6-b")

    message_id = await retrying(send, attempts=3, sleep=sleeps)
    assert message_id in chat_messages(sandbox) and calls == 2
    [wait] = sleeps.waits
    assert 1 <= wait <= 1.1


async def test_injected_patch_rate_limits_are_retried_with_backoff(
    sandbox: Sandbox, api: LarkApi
) -> None:
    message_id = await api.send_card("oc_ops", v2_card(), "op-7-card")
    await sandbox.control("POST", "/faults", {"fail_next_patches": 2, "fail_patch_code": 230020})
    sleeps = Sleeps()
    await retrying(lambda: api.patch_card(message_id, v2_card("Done")), attempts=5, sleep=sleeps)
    first, second = sleeps.waits
    assert 0.25 <= first <= 0.5 <= second <= 0.75  # 0.25 * 2^n plus up to 0.25 jitter
    _status, view = await sandbox.control("GET", f"/messages/{message_id}")
    assert [rev["source"] for rev in view["history"]] == ["create", "patch"]


async def test_a_patch_refused_while_the_card_is_clicked_is_retried_until_it_lands(
    sandbox: Sandbox, api: LarkApi, lark_codes: list[int]
) -> None:
    message_id = await api.send_card("oc_ops", v2_card(), "op-lock-card")
    # as a click whose callback is not answered yet: Lark answers 230099 "card action is lock"
    await sandbox.control("POST", f"/messages/{message_id}/lock", {"hold": True})

    async def answered(_seconds: float) -> None:
        if len(sleeps.waits) == 2:  # the second wait: the callback was answered meanwhile
            await sandbox.control("POST", f"/messages/{message_id}/lock", {"hold": False})

    sleeps = Sleeps(then=answered)
    await retrying(lambda: api.patch_card(message_id, v2_card("Done")), attempts=4, sleep=sleeps)
    assert lark_codes == [0, 230099, 230099, 0] and len(sleeps.waits) == 2
    _status, view = await sandbox.control("GET", f"/messages/{message_id}")
    assert [rev["source"] for rev in view["history"]] == ["create", "patch"]


@pytest.mark.parametrize(
    ("err_msg", "kind"),
    [
        (
            "Failed to create card content, ext=ErrCode: 11310; ErrMsg: card action is lock; ",
            "transient",
        ),
        (
            "Failed to create card content, ext=ErrCode: 11310; ErrMsg: element exceeds the limit; ",
            "terminal",
        ),
        (
            "Failed to create card content, ext=ErrCode: 11310; ErrMsg: template is not visible to app, please confirm whether the app is allowed to use this template; ",
            "terminal",
        ),
        (
            "Failed to create card content, ext=ErrCode: 200621; ErrMsg: parse card json err; ",
            "terminal",
        ),
    ],
)
def test_of_230099_only_the_card_lock_is_transient(err_msg: str, kind: str) -> None:
    error = LarkApiError(230099, f"patch_card: {err_msg}", http_status=400)
    assert (error.kind, error.card_locked, error.retryable) == (
        kind,
        kind == "transient",
        kind == "transient",
    )


async def test_a_card_older_than_14_days_fails_at_once(
    sandbox: Sandbox, api: LarkApi, lark_codes: list[int]
) -> None:
    message_id = await api.send_card("oc_ops", v2_card(), "op-8-card")
    await advance(sandbox, 15 * DAY_S)  # also expires the token: the call refetches it first
    calls = 0

    async def patch() -> None:
        nonlocal calls
        calls += 1
        await api.patch_card(message_id, v2_card("late"))

    sleeps = Sleeps()
    with pytest.raises(LarkApiError) as old:
        await retrying(patch, attempts=5, sleep=sleeps)
    assert (old.value.code, old.value.kind, calls, sleeps.waits) == (230031, "terminal", 1, [])
    assert lark_codes == [0, 99991663, 230031]


async def test_patching_another_apps_card_fails_at_once(sandbox: Sandbox, api: LarkApi) -> None:
    other = App("cli_other", "other-secret", "sandbox-tenant", "ek", "vt")
    sandbox.state.apps[other.app_id] = other
    sandbox.state.chats["oc_ops"].apps.append(other.app_id)
    message_id = await api.send_card("oc_ops", v2_card(), "op-9-card")
    stranger = LarkApi(other.app_id, other.app_secret, sandbox.base_url)
    calls = 0

    async def patch() -> None:
        nonlocal calls
        calls += 1
        await stranger.patch_card(message_id, v2_card("mine now"))

    try:
        with pytest.raises(LarkApiError) as refused:
            await retrying(patch, attempts=5, sleep=Sleeps())
    finally:
        await stranger.close()
    assert (refused.value.code, refused.value.kind, calls) == (230027, "terminal", 1)


async def test_invalid_requests_are_terminal(sandbox: Sandbox, api: LarkApi) -> None:
    with pytest.raises(LarkApiError) as unknown:
        await api.patch_card("om_nope", v2_card())
    assert (unknown.value.code, unknown.value.kind) == (230001, "terminal")
    with pytest.raises(LarkApiError) as too_big:
        await api.send_card("oc_ops", v2_card(pad=31 * 1024), "op-10-big")
    assert (too_big.value.code, too_big.value.kind) == (230025, "terminal")
    with pytest.raises(ValueError, match="uuid"):
        await api.send_card("oc_ops", v2_card(), "x" * 51)


@pytest.fixture
async def gateway() -> AsyncIterator[str]:
    """A stub Lark whose token endpoint works and whose message endpoints fail like a gateway."""

    async def token(_request: web.Request) -> web.Response:
        return web.json_response({"code": 0, "tenant_access_token": "t-stub", "expire": 7200})

    async def bad_gateway(_request: web.Request) -> web.Response:
        return web.Response(
            status=502, text="<html>502 Bad Gateway</html>", content_type="text/html"
        )

    async def unavailable(_request: web.Request) -> web.Response:
        return web.json_response({"code": 1500, "msg": "internal error"}, status=503)

    app = web.Application()
    app.router.add_post("/open-apis/auth/v3/tenant_access_token/internal", token)
    app.router.add_post("/open-apis/im/v1/messages", bad_gateway)
    app.router.add_patch("/open-apis/im/v1/messages/{id}", unavailable)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    yield f"http://127.0.0.1:{server.port}"
    await server.close()


async def test_gateway_failures_are_transient(gateway: str) -> None:
    api = LarkApi("cli_x", "secret", gateway)
    try:
        with pytest.raises(LarkApiError) as html:
            await api.send_card("oc_ops", v2_card(), "op-11-card")
        with pytest.raises(LarkApiError) as busy:
            await retrying(lambda: api.patch_card("om_1", v2_card()), attempts=2, sleep=Sleeps())
    finally:
        await api.close()
    assert (html.value.code, html.value.kind) == (-1, "transient")
    assert (busy.value.code, busy.value.http_status, busy.value.kind) == (1500, 503, "transient")


@pytest.mark.parametrize(
    ("code", "status", "kind"),
    [
        (230020, 400, "rate_limited"),
        (99991400, 429, "rate_limited"),
        (99991661, 400, "token"),
        (99991663, 400, "token"),
        (99991664, 400, "token"),
        (99991668, 400, "token"),
        (230031, 400, "terminal"),
        (230011, 400, "terminal"),
        (230110, 400, "terminal"),
        (232009, 400, "terminal"),
        (230027, 400, "terminal"),
        (230002, 400, "terminal"),
        (230013, 400, "terminal"),
        (230001, 400, "terminal"),
        (230099, 400, "terminal"),
        (230025, 400, "terminal"),
        (-1, None, "transient"),
        (123456, 400, "transient"),
        (230001, 502, "transient"),
    ],
)
def test_error_kinds(code: int, status: int | None, kind: str) -> None:
    assert LarkApiError(code, "m", http_status=status).kind == kind


async def test_retrying_stops_after_the_last_attempt_with_its_error() -> None:
    calls = 0

    async def flaky() -> None:
        nonlocal calls
        calls += 1
        raise LarkApiError(-1, f"ConnectError #{calls}")

    sleeps = Sleeps()
    with pytest.raises(LarkApiError, match="#3"):
        await retrying(flaky, attempts=3, max_delay_s=0.3, sleep=sleeps)
    assert calls == 3 and len(sleeps.waits) == 2 and max(sleeps.waits) <= 0.3


async def test_retrying_gives_up_when_lark_asks_for_longer_than_max_delay() -> None:
    calls = 0

    async def limited() -> None:
        nonlocal calls
        calls += 1
        raise LarkApiError(99991400, "request trigger frequency limit", retry_after_s=60)

    with pytest.raises(LarkApiError):
        await retrying(limited, attempts=5, max_delay_s=5, sleep=Sleeps())
    assert calls == 1


async def test_a_request_carrying_files_is_refused_before_anything_is_sent() -> None:
    # The bot sends JSON only; a multipart upload is refused by the transport, never sent
    # half-built. The domain is unreachable on purpose: a send would fail differently.
    from lark_oapi.api.im.v1 import CreateImageRequest, CreateImageRequestBody  # type: ignore[import-untyped]
    from lark_oapi.core.model import RequestOption  # type: ignore[import-untyped]
    from lark_oapi.core.utils import Files  # type: ignore[import-untyped]

    transport = LarkTransport("http://127.0.0.1:9", timeout_s=1.0)
    try:
        request = (
            CreateImageRequest.builder()
            .request_body(
                CreateImageRequestBody.builder()
                .image_type("message")
                .image(io.BytesIO(b"png"))
                .build()
            )
            .build()
        )
        request.files = Files.extract_files(request.body)  # as the SDK's `acreate` does
        with pytest.raises(TypeError, match="JSON requests only"):
            await transport.send(request, RequestOption())
    finally:
        await transport.close()
