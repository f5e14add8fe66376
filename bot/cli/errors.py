"""What a command raises and the exit codes it means; imported by the parser's boundary, so
it imports nothing (`countersign --version` and `--help` load no more than this)."""

from __future__ import annotations

EXIT_API = 1
EXIT_USAGE = 2


class CommandError(Exception):
    """An expected failure: the boundary prints `error: <message>` and exits with `exit_code`."""

    def __init__(self, message: str, exit_code: int = EXIT_API) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
