"""A local Lark: the OpenAPI subset, long-connection and webhook push, a control API and a web UI.

The unmodified lark-oapi SDK talks to it. Where Lark's documents leave a behaviour open,
the choice made here is listed in `larksandbox/README.md`. It imports nothing of the bot:
Lark knows nothing of countersign either (tests/test_layout.py holds that).

The surface tests and tools use:

* start: `build_sandbox(state, SandboxOptions(...))` is an aiohttp application; serve it
  like any other (`countersign sandbox` does, in `bot/devstack.py`).
* state: `default_state()` (one app, four users, three chats), `SandboxState.load(path)`,
  and the `App`, `User`, `Chat`, `Message`, `Click` and `Faults` it holds.
* click, push, faults: the control API under `/sandbox/api/` (its routes are in
  `larksandbox/control.py` and `larksandbox/control_cards.py`; the README lists them), as
  the web UI uses it.
* sealing a webhook delivery as Lark does: `sealed_body`, `signed_headers`.
* web sign-in (Lark's OAuth authorize page, token endpoint, user info): larksandbox/oauth.py;
  an app's `redirect_urls` are set with `PATCH /sandbox/api/apps/{app_id}`, as is its
  `group_msg_scope` (Lark's im:message.group_msg: every group message, not only mentions).
"""

from larksandbox.app import SandboxOptions, build_sandbox
from larksandbox.entities import App, Chat, Click, Faults, Message, User
from larksandbox.state import DEFAULT_APP_ID, SandboxState, default_state
from larksandbox.webhook import sealed_body, signed_headers

__all__ = [
    "DEFAULT_APP_ID",
    "App",
    "Chat",
    "Click",
    "Faults",
    "Message",
    "SandboxOptions",
    "SandboxState",
    "User",
    "build_sandbox",
    "default_state",
    "sealed_body",
    "signed_headers",
]
