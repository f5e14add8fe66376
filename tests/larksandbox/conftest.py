"""A real sandbox on a loopback port (`sandbox`), headless Chromium (`browser`), a pusher."""

from tests.support.browser import browser  # noqa: F401  (fixture)
from tests.support.sandbox import sandbox  # noqa: F401  (fixture)
from tests.support.webhook_routes import pusher  # noqa: F401  (fixture)
