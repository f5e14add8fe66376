"""Headless Chromium (`browser`) and a real sandbox subprocess (`sandbox_process`) for the
card gallery in the sandbox UI."""

from tests.support.browser import browser  # noqa: F401  (fixture)
from tests.support.ui_sandbox import sandbox_process  # noqa: F401  (fixture)
