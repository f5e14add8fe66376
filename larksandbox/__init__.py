"""A local Lark: the OpenAPI subset, long-connection and webhook push, a control API and a web UI.

The unmodified lark-oapi SDK talks to it. Where Lark's documents leave a behaviour open,
the choice made here is listed in `larksandbox/README.md`. It imports nothing of the bot:
Lark knows nothing of countersign either (tests/test_layout.py holds that).

The surface tests and tools use:

* start: `build_sandbox(state, SandboxOptions(...))` is an aiohttp application; serve it
  like any other (`countersign sandbox` does, in `bot/app/devstack.py`).
* state: `default_state()` (one app, four users, three chats), `SandboxState.load(path)`,
  and the `App`, `User`, `Chat`, `Message`, `Click` and `Faults` it holds.
* click, push, faults: the control API under `/sandbox/api/` (its routes are in
  `larksandbox/control.py` and `larksandbox/control_cards.py`; the README lists them), as
  the web UI uses it.
* sealing a webhook delivery as Lark does: `sealed_body`, `signed_headers` (and `encrypt`,
  `signature` and the header names for tests that forge one); pushing one: `WebhookPusher`.
* in-process tests: the running application's `Hub` under `HUB_KEY` (its long connections
  and dispatch), the long connection's `ClientConfig` and `ENDPOINT_PATH`, the OpenAPI
  `Handler`, the card schema's `ELEMENT_LIMIT` and `element_count`, and how Lark reads a
  text message's markup (`read_text`: its mentions and links). Tests outside
  tests/larksandbox/ import only from here (tests/test_layout.py holds that).
* web sign-in (Lark's OAuth authorize page, token endpoint, user info): larksandbox/oauth.py;
  an app's `redirect_urls` are set with `PATCH /sandbox/api/apps/{app_id}`, as is its
  `group_msg_scope` (Lark's im:message.group_msg: every group message, not only mentions).
"""

from larksandbox.app import SandboxOptions, build_sandbox
from larksandbox.cards.schema import ELEMENT_LIMIT, element_count
from larksandbox.control_requests import HUB_KEY
from larksandbox.entities import App, Chat, Click, Faults, Message, User
from larksandbox.hub import Hub
from larksandbox.longconn_wire import ENDPOINT_PATH, ClientConfig
from larksandbox.openapi import Handler
from larksandbox.state import DEFAULT_APP_ID, SandboxState, default_state
from larksandbox.textmarkup import TextReading, read_text
from larksandbox.webhook import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    WebhookPusher,
    encrypt,
    sealed_body,
    signature,
    signed_headers,
)

__all__ = [
    "DEFAULT_APP_ID",
    "ELEMENT_LIMIT",
    "ENDPOINT_PATH",
    "HUB_KEY",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "App",
    "Chat",
    "Click",
    "ClientConfig",
    "Faults",
    "Handler",
    "Hub",
    "Message",
    "SandboxOptions",
    "SandboxState",
    "TextReading",
    "User",
    "WebhookPusher",
    "build_sandbox",
    "default_state",
    "element_count",
    "encrypt",
    "read_text",
    "sealed_body",
    "signature",
    "signed_headers",
]
