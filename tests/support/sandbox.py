"""A real sandbox on a loopback port; the unmodified lark-oapi SDK pointed at it.

The `sandbox` fixture is exposed by the conftest.py of each test directory that uses it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp
import lark_oapi as lark  # type: ignore[import-untyped]
import pytest
from aiohttp.test_utils import TestServer
from lark_oapi.api.im.v1 import (  # type: ignore[import-untyped]
    CreateMessageRequest,
    CreateMessageRequestBody,
    PatchMessageRequest,
    PatchMessageRequestBody,
)
from lark_oapi.core.token.manager import TokenManager  # type: ignore[import-untyped]

from larksandbox import (
    DEFAULT_APP_ID,
    HUB_KEY,
    App,
    Hub,
    SandboxOptions,
    SandboxState,
    build_sandbox,
    default_state,
)
from tests.support.receivers import Receiver, webhook_receiver

T = TypeVar("T")


@dataclass
class Sandbox:
    base_url: str
    state: SandboxState
    hub: Hub
    http: aiohttp.ClientSession

    @property
    def app(self) -> App:
        return self.state.apps[DEFAULT_APP_ID]

    async def control(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        async with self.http.request(method, f"{self.base_url}/sandbox/api{path}", json=body) as r:
            return r.status, await r.json()

    async def token(self, app: App | None = None) -> str:
        app = app or self.app
        async with self.http.post(
            f"{self.base_url}/open-apis/auth/v3/tenant_access_token/internal",
            json={"app_id": app.app_id, "app_secret": app.app_secret},
        ) as response:
            body = await response.json()
        token: str = body["tenant_access_token"]
        return token

    async def openapi(
        self, method: str, path: str, token: str, body: Any = None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        async with self.http.request(
            method,
            f"{self.base_url}/open-apis{path}",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
        ) as response:
            return response.status, await response.json(), dict(response.headers)


# Lark wants the url_verification echo within 1 s (tests/larksandbox/test_webhook.py holds the
# sandbox to that); a test's receiver on a loaded machine may need longer, so tests allow this.
TEST_URL_VERIFY_TIMEOUT_S = 30.0


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    state = default_state()
    options = SandboxOptions(callback_timeout_s=1.0, url_verify_timeout_s=TEST_URL_VERIFY_TIMEOUT_S)
    app = build_sandbox(state, options)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    async with aiohttp.ClientSession() as http:
        yield Sandbox(f"http://127.0.0.1:{server.port}", state, app[HUB_KEY], http)
    await server.close()


def lark_client(sandbox: Sandbox, app: App | None = None) -> Any:
    """The unmodified SDK client; its token cache is process-global, so start it empty."""
    TokenManager.cache.cache.clear()
    app = app or sandbox.app
    return (
        lark.Client.builder()
        .app_id(app.app_id)
        .app_secret(app.app_secret)
        .domain(sandbox.base_url)
        .log_level(lark.LogLevel.ERROR)
        .build()
    )


async def sdk(call: Callable[..., T], *args: Any) -> T:
    """Run a blocking SDK call off the loop that serves the sandbox."""
    return await asyncio.to_thread(call, *args)


# -- cards and the SDK's requests for them -----------------------------------------------------


def v2_card(title: str = "Confirm order", *, buttons: bool = True, pad: int = 0) -> dict[str, Any]:
    elements: list[dict[str, Any]] = [
        {"tag": "markdown", "content": f"**Side** buy\n**Qty** 0.01{' ' * pad}"}
    ]
    if buttons:
        elements.append(
            {
                "tag": "column_set",
                "columns": [
                    {
                        "tag": "column",
                        "elements": [
                            {
                                "tag": "button",
                                "element_id": "confirm",
                                "type": "primary_filled",
                                "text": {"tag": "plain_text", "content": "Confirm"},
                                "behaviors": [{"type": "callback", "value": {"action": "confirm"}}],
                            }
                        ],
                    },
                    {
                        "tag": "column",
                        "elements": [
                            {
                                "tag": "button",
                                "element_id": "reject",
                                "type": "danger",
                                "text": {"tag": "plain_text", "content": "Reject"},
                                "behaviors": [{"type": "callback", "value": {"action": "reject"}}],
                            }
                        ],
                    },
                ],
            }
        )
    return {
        "schema": "2.0",
        "config": {"update_multi": True},
        "header": {"template": "orange", "title": {"tag": "plain_text", "content": title}},
        "body": {"elements": elements},
    }


def form_card(*, required: bool = False, max_length: int = 200) -> dict[str, Any]:
    """A Reject step as the bot renders it: a form with a reason input, a submit button (with
    a callback value), a second submit, a reset; and a Confirm button with a confirm dialog."""
    card = v2_card("Reject order?", buttons=False)

    def submit(name: str, label: str, action: str) -> dict[str, Any]:
        return {
            "tag": "button",
            "name": name,
            "form_action_type": "submit",
            "type": "danger",
            "text": {"tag": "plain_text", "content": label},
            "behaviors": [{"type": "callback", "value": {"action": action, "req": "42"}}],
        }

    card["body"]["elements"] += [
        {
            "tag": "form",
            "name": "reject_form",
            "elements": [
                {
                    "tag": "input",
                    "name": "reason",
                    "required": required,
                    "max_length": max_length,
                    "placeholder": {"tag": "plain_text", "content": "Why reject?"},
                },
                {"tag": "input", "name": "ticket", "default_value": "T-1"},
                {
                    "tag": "column_set",
                    "columns": [
                        {
                            "tag": "column",
                            "elements": [submit("reject_submit", "Reject", "reject")],
                        },
                        {"tag": "column", "elements": [submit("back_submit", "Back", "back")]},
                    ],
                },
                {
                    "tag": "button",
                    "name": "clear",
                    "form_action_type": "reset",
                    "text": {"tag": "plain_text", "content": "Clear"},
                },
            ],
        },
        {
            "tag": "button",
            "element_id": "confirm",
            "type": "primary_filled",
            "text": {"tag": "plain_text", "content": "Confirm"},
            "confirm": {
                "title": {"tag": "plain_text", "content": "Confirm the order?"},
                "text": {
                    "tag": "plain_text",
                    "content": "Buy 0.01 BTC at market",
                    "i18n_content": {"zh_cn": "以市价买入 0.01 BTC"},
                },
            },
            "behaviors": [{"type": "callback", "value": {"action": "confirm", "req": "42"}}],
        },
    ]
    return card


def card_content(card: dict[str, Any]) -> str:
    return json.dumps(card, ensure_ascii=False)


def create_request(
    receive_id: str,
    content: str,
    *,
    msg_type: str = "interactive",
    uuid: str | None = None,
    id_type: str = "chat_id",
) -> Any:
    body = (
        CreateMessageRequestBody.builder()
        .receive_id(receive_id)
        .msg_type(msg_type)
        .content(content)
    )
    if uuid:
        body = body.uuid(uuid)
    return (
        CreateMessageRequest.builder().receive_id_type(id_type).request_body(body.build()).build()
    )


def patch_request(message_id: str, content: str) -> Any:
    return (
        PatchMessageRequest.builder()
        .message_id(message_id)
        .request_body(PatchMessageRequestBody.builder().content(content).build())
        .build()
    )


async def send_card(client: Any, card: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    return await sdk(
        client.im.v1.message.create,
        create_request("oc_ops", card_content(card or v2_card()), **kwargs),
    )


@pytest.fixture
async def receiver(sandbox: Sandbox) -> AsyncIterator[Receiver]:
    """A webhook receiver the sandbox's default app sends its card callbacks to."""
    async with webhook_receiver(sandbox.app) as found:
        status, body = await sandbox.control(
            "PATCH", f"/apps/{DEFAULT_APP_ID}", {"card_url": f"{found.url}/card"}
        )
        assert status == 200, body
        yield found
