"""A real sandbox on a loopback port (`sandbox`), and headless Chromium (`browser`)."""

from tests.support.browser import browser  # noqa: F401  (fixture)
from tests.support.sandbox import sandbox  # noqa: F401  (fixture)
