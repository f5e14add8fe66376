"""The real bot against the real sandbox: fixtures that read like the product.

`make_stack` and `stack` (tests/support/stack.py) run the bot in-process against an
in-process sandbox; `browser` (tests/support/browser.py) is headless Chromium; `artifacts`
(tests/support/dashboard.py) is where screenshots are kept; `receiver`
(tests/support/proposer_routes.py) is a proposer's webhook endpoint.
"""

from tests.support.browser import browser  # noqa: F401  (fixture)
from tests.support.dashboard import artifacts  # noqa: F401  (fixture)
from tests.support.proposer_routes import receiver  # noqa: F401  (fixture)
from tests.support.stack import make_stack, stack  # noqa: F401  (fixtures)
