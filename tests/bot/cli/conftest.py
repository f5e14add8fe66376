"""The CLI against a bot that people decide on: `make_stack` (tests/support/stack.py) runs the
bot in-process against an in-process sandbox, and the CLI runs as a real process."""

from tests.support.stack import make_stack  # noqa: F401  (fixture)
