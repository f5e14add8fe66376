"""A real sandbox on a loopback port (`sandbox`), one as a subprocess (`sandbox_process`),
headless Chromium (`browser`), a pusher, webhook receivers for the browser tests."""

from tests.support.browser import browser  # noqa: F401  (fixture)
from tests.support.sandbox import receiver, sandbox  # noqa: F401  (fixture)
from tests.support.ui_sandbox import receiver_factory, sandbox_process  # noqa: F401  (fixture)
from tests.support.webhook_routes import pusher  # noqa: F401  (fixture)
