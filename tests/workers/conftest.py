"""The card worker's tests post to a real sandbox on a loopback port (`sandbox`)."""

from tests.support.sandbox import sandbox  # noqa: F401  (fixture)
