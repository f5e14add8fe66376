"""The one error boundary: every expected failure becomes one line on stderr and an exit code.

Commands raise; nothing below this module prints a traceback for a busy port, a directory
given as a file, Ctrl-C or a reader that closed the pipe. The failures other modules define
are told apart only once one happened (`expected`): the parser and this boundary import
nothing a command does not use (bot/cli/lazy.py).
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
from collections.abc import Callable

from bot.cli.errors import EXIT_API, EXIT_USAGE, CommandError

EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what `head` leaves behind for other tools


def restore_ctrl_c() -> None:
    """Ctrl-C stops a command even when its parent started it with SIGINT ignored (`cmd &`
    in a script, some process managers): Python then keeps it ignored, and asyncio installs
    its own handler only over the default one."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def run_command(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    try:
        code = command(args)
        sys.stdout.flush()  # inside the boundary: a reader that left shows up here, not at exit
        return code
    except CommandError as error:
        print(f"error: {error.message}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader left (`| head`): say nothing, and keep the interpreter's final flush
        # of stdout from raising again on the way out.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except OSError as error:
        line = os_error_line(error)
        if line is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as error:
        known = expected(error)
        if known is None:
            raise
        return known


def expected(error: Exception) -> int | None:
    """Print a failure another module defines and give its exit code (None: not one of
    them). Their classes are imported here, after one was raised: the store's would load
    Alembic and SQLAlchemy, which `--help` must not pay."""
    from bot.lark.sdk_check import SdkMismatch
    from kernel.problems import ProblemsFound
    from store import StoreNotMigrated, StoreUnreachable

    if isinstance(error, ProblemsFound):
        for problem in error.problems:
            print(problem.line(), file=sys.stderr)
        return EXIT_USAGE
    if isinstance(error, StoreUnreachable):
        print(f"error: {error.problem.line()}", file=sys.stderr)
        return EXIT_USAGE
    if isinstance(error, SdkMismatch | StoreNotMigrated):
        print(f"error: {error}", file=sys.stderr)
        return EXIT_API
    return None


def os_error_line(error: OSError) -> str | None:
    """A plain sentence for the OS errors a person can fix, None for the rest."""
    if error.errno == errno.EADDRINUSE:
        return (
            f"{error.strerror or 'address already in use'}: "
            "stop what listens there or choose another port (--port / --sandbox-port)"
        )
    if error.errno == errno.EADDRNOTAVAIL:
        return f"{error.strerror or 'address not available'}: use an address of this machine"
    if isinstance(error, IsADirectoryError):
        return f"{error.filename} is a directory: give a file"
    if isinstance(error, PermissionError) and error.filename:
        return f"{error.filename}: permission denied: fix its permissions or choose another path"
    return None
