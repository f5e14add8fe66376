"""Lark messaging with the unmodified lark-oapi models, without ever blocking the event loop.

Requests are built by the SDK's builders and sent by `LarkTransport` over one long-lived HTTP
client (the SDK's async calls would build a client per request), each with the tenant token
from `TenantTokens` passed in its `RequestOption`; the SDK config has `enable_set_token(True)`
and *no* app credentials, so the SDK's synchronous token fetch (docs/lark-reference.md §4.4) cannot run: a call
that reached it would fail at once instead of blocking. The token fetch shares the client.

Errors become `LarkApiError` with a `kind`: "token" errors are retried once inside the call with
a fresh token; `retrying()` retries "rate_limited" and "transient" ones; "terminal" ones are final.
A patch Lark refuses because someone is clicking the card (230099 "card action is lock") is
"transient": the card is free again once the click's callback is answered.
A send carries a caller-chosen `uuid`, which Lark dedupes for an hour, so retrying a send whose
answer was lost can never post the message twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import httpx
from lark_oapi.api.im.v1 import (  # type: ignore[import-untyped]
    CreateMessageRequest,
    CreateMessageRequestBody,
    CreateMessageResponse,
    GetMessageRequest,
    GetMessageResponse,
    ListMessageRequest,
    ListMessageResponse,
    PatchMessageRequest,
    PatchMessageRequestBody,
    PatchMessageResponse,
    ReplyMessageRequest,
    ReplyMessageRequestBody,
    ReplyMessageResponse,
)
from lark_oapi.core.model import RequestOption  # type: ignore[import-untyped]
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_exponential_jitter

from bot.lark.tokens import TRANSPORT_ERROR, LarkApiError, TenantTokens, retry_after
from bot.lark.transport import LarkTransport

__all__ = ["LarkApi", "LarkApiError", "TenantTokens", "retrying"]

log = logging.getLogger("countersign.lark.api")

T = TypeVar("T")

UUID_MAX_LEN = 50  # Lark's limit on the create/reply dedupe key


def _compact(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _error(op: str, response: Any) -> LarkApiError:
    raw = response.raw
    status = raw.status_code if raw is not None else None
    headers = raw.headers if raw is not None else None
    code = response.code if isinstance(response.code, int) else TRANSPORT_ERROR
    return LarkApiError(
        code,
        f"{op}: {response.msg or 'no message'}",
        http_status=status,
        retry_after_s=retry_after(headers),
    )


class LarkApi:
    """Send, reply to, patch and read messages as one app (tenant token)."""

    def __init__(
        self,
        app_id: str,
        app_secret: str,
        domain: str,
        *,
        timeout_s: float = 10,
        tokens: TenantTokens | None = None,
    ) -> None:
        self.transport = LarkTransport(domain, timeout_s=timeout_s)
        self._owns_tokens = tokens is None
        self.tokens = tokens or TenantTokens(
            app_id, app_secret, domain, timeout_s=timeout_s, transport=self.transport
        )

    async def close(self) -> None:
        if self._owns_tokens:
            await self.tokens.close()
        await self.transport.close()

    async def _call(self, op: str, invoke: Callable[[Any], Awaitable[Any]]) -> Any:
        """Run one SDK call; on a token error, drop the token and try once more."""
        for attempt in (1, 2):
            token = await self.tokens.get()
            option = RequestOption.builder().tenant_access_token(token).build()
            try:
                response = await invoke(option)
            except httpx.HTTPError as error:
                raise LarkApiError(
                    TRANSPORT_ERROR, f"{op}: {type(error).__name__} {error}".rstrip()
                ) from error
            except ValueError as error:  # the SDK could not parse the body (a gateway's 502 page)
                raise LarkApiError(
                    TRANSPORT_ERROR, f"{op}: unreadable response ({type(error).__name__})"
                ) from error
            if response.success():
                return response
            failure = _error(op, response)
            if failure.kind == "token" and attempt == 1:
                self.tokens.invalidate(token)
                log.info("%s: token rejected (%s), retrying with a fresh one", op, failure.code)
                continue
            raise failure
        raise AssertionError("unreachable")

    async def send_card(self, chat_id: str, card: dict[str, Any], uuid: str) -> str:
        """Post `card` (JSON 2.0 dict) into a chat; returns the message_id."""
        return await self._create("send_card", "chat_id", chat_id, "interactive", card, uuid)

    async def send_text(
        self, receive_id: str, text: str, uuid: str, id_type: str = "chat_id"
    ) -> str:
        return await self._create("send_text", id_type, receive_id, "text", {"text": text}, uuid)

    async def _create(
        self, op: str, id_type: str, receive_id: str, msg_type: str, content: Any, uuid: str
    ) -> str:
        _check_uuid(uuid)
        body = (
            CreateMessageRequestBody.builder()
            .receive_id(receive_id)
            .msg_type(msg_type)
            .content(_compact(content))
            .uuid(uuid)
            .build()
        )

        def invoke(option: Any) -> Awaitable[Any]:
            request = (
                CreateMessageRequest.builder().receive_id_type(id_type).request_body(body).build()
            )
            return self.transport.call(request, option, CreateMessageResponse)

        response = await self._call(op, invoke)
        message_id: str = response.data.message_id
        return message_id

    async def reply_text(self, message_id: str, text: str, uuid: str) -> str:
        """Reply to a message with text; returns the reply's message_id."""
        _check_uuid(uuid)
        body = (
            ReplyMessageRequestBody.builder()
            .msg_type("text")
            .content(_compact({"text": text}))
            .uuid(uuid)
            .build()
        )

        def invoke(option: Any) -> Awaitable[Any]:
            request = (
                ReplyMessageRequest.builder().message_id(message_id).request_body(body).build()
            )
            return self.transport.call(request, option, ReplyMessageResponse)

        response = await self._call("reply_text", invoke)
        reply_id: str = response.data.message_id
        return reply_id

    async def patch_card(self, message_id: str, card: dict[str, Any]) -> None:
        """Replace the content of a card this app sent."""
        body = PatchMessageRequestBody.builder().content(_compact(card)).build()

        def invoke(option: Any) -> Awaitable[Any]:
            request = (
                PatchMessageRequest.builder().message_id(message_id).request_body(body).build()
            )
            return self.transport.call(request, option, PatchMessageResponse)

        await self._call("patch_card", invoke)

    async def get_message(self, message_id: str) -> dict[str, Any]:
        """Lark's message item: `message_id`, `msg_type`, `chat_id`, `body.content` (a JSON
        string), `sender`, `updated`, `create_time`, ... exactly as the API returns it."""

        def invoke(option: Any) -> Awaitable[Any]:
            request = GetMessageRequest.builder().message_id(message_id).build()
            return self.transport.call(request, option, GetMessageResponse)

        response = await self._call("get_message", invoke)
        try:
            items = json.loads(response.raw.content)["data"]["items"]
            item: dict[str, Any] = items[0]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LarkApiError(
                TRANSPORT_ERROR,
                f"get_message: no item for {message_id} in a successful answer",
                http_status=response.raw.status_code,
            ) from None
        return item

    async def chat_history(
        self, chat_id: str, since_s: int = 0, page_size: int = 50
    ) -> AsyncIterator[dict[str, Any]]:
        """A chat's messages from `since_s` (epoch seconds) on, oldest first, as the API's
        items (as `get_message` returns them), a page at a time. Needs the bot in the chat."""
        token = ""
        while True:

            def invoke(option: Any, token: str = token) -> Awaitable[Any]:
                builder = (
                    ListMessageRequest.builder()
                    .container_id_type("chat")
                    .container_id(chat_id)
                    .start_time(str(since_s))
                    .sort_type("ByCreateTimeAsc")
                    .page_size(page_size)
                )
                if token:
                    builder = builder.page_token(token)
                return self.transport.call(builder.build(), option, ListMessageResponse)

            response = await self._call("chat_history", invoke)
            data = json.loads(response.raw.content)["data"]
            for item in data.get("items") or []:
                yield item
            token = data.get("page_token") or ""
            if not data.get("has_more") or not token:
                return


def _check_uuid(uuid: str) -> None:
    if not uuid or len(uuid) > UUID_MAX_LEN:
        raise ValueError(f"uuid must be 1..{UUID_MAX_LEN} characters, got {len(uuid)}")


async def retrying(
    call: Callable[[], Awaitable[T]],
    *,
    attempts: int,
    max_delay_s: float = 30.0,
    initial_delay_s: float = 0.25,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Await `call()` up to `attempts` times, retrying "rate_limited" and "transient" errors.

    Waits grow exponentially from `initial_delay_s` with jitter, capped at `max_delay_s`; a
    server-given `retry_after_s` is waited out (plus a little jitter) instead. When the server
    asks for longer than `max_delay_s`, the error is raised at once: waiting less is pointless.
    Terminal and token errors, and any other exception, propagate at once; after the last
    attempt its error propagates (never a tenacity RetryError). `sleep` is for tests.
    """
    backoff = wait_exponential_jitter(
        multiplier=initial_delay_s, max=max_delay_s, jitter=initial_delay_s
    )

    def should_retry(error: BaseException) -> bool:
        if not isinstance(error, LarkApiError) or not error.retryable:
            return False
        return error.retry_after_s is None or error.retry_after_s <= max_delay_s

    def wait(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        if isinstance(error, LarkApiError) and error.retry_after_s is not None:
            return error.retry_after_s + random.uniform(0, 0.1)
        return float(backoff(state))

    def before_sleep(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        delay = state.next_action.sleep if state.next_action is not None else 0.0
        # expected (a card locked while its callback is answered, a chat's 5 messages/s):
        # the caller logs the error that outlasts its attempts
        log.debug(
            "%s; attempt %d/%d, retrying in %.2fs", error, state.attempt_number, attempts, delay
        )

    # Iterate rather than `await AsyncRetrying(...)(call)`: tenacity decides by inspection
    # whether `call` is a coroutine function, and a lambda returning a coroutine is not one, so
    # it would hand back the un-awaited coroutine as the "result" and never retry.
    async for attempt in AsyncRetrying(
        stop=stop_after_attempt(attempts),
        wait=wait,
        retry=retry_if_exception(should_retry),
        before_sleep=before_sleep,
        sleep=sleep,
        reraise=True,
    ):
        with attempt:
            return await call()
    raise AssertionError("unreachable: tenacity reraises the last error")
