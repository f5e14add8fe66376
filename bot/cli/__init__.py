"""`countersign` command line: a parser, command modules, and one error boundary.

`serving` runs what serves until stopped, `operator_tools` works on the store directly,
`api_commands` talks to a running bot; `boundary` turns every expected failure into one
line on stderr and an exit code.
"""

from __future__ import annotations

from bot.cli.boundary import restore_ctrl_c, run_command
from bot.cli.parser import build_parser


def main(argv: list[str] | None = None) -> int:
    restore_ctrl_c()
    args = build_parser().parse_args(argv)
    return run_command(args.func, args)


__all__ = ["build_parser", "main"]
