"""Commands named by module, imported when they run, and help text computed when shown.

`countersign --version`, `--help` and a usage error parse arguments only; what a command
needs (the store, the kinds' registry, aiohttp, the MCP SDK) is imported by that command
alone, on its call. tests/bot/cli/test_light_start.py holds it.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any


class Command:
    """`module.name(args) -> int`, imported on the call."""

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def resolve(self) -> Callable[[argparse.Namespace], int]:
        found: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module(self.module), self.name
        )
        return found

    def __call__(self, args: argparse.Namespace) -> int:
        return self.resolve()(args)

    def __repr__(self) -> str:
        return f"Command({self.module}.{self.name})"


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose description may be `describe()`, called only to show help
    (subparsers are of this class too: argparse builds them as the parent's type)."""

    def __init__(self, *args: Any, describe: Callable[[], str] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._describe = describe

    def format_help(self) -> str:
        if self._describe is not None:
            self.description = self._describe()
        return super().format_help()
