"""What every command shares: defaults, how a config is found and a store opened.

The config package is imported by the functions that read one: it loads every kind's
settings (the registry, SQLAlchemy, pydantic), which `countersign list --token T` never needs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.cli.defaults import DEFAULT_DEV_DIR

if TYPE_CHECKING:
    from bot.config import Settings

DEFAULT_CONFIG = Path("countersign.toml")
DEFAULT_PORT = 8080


def config_path(args: argparse.Namespace) -> Path:
    """The config file named by --config or COUNTERSIGN_CONFIG, else ./countersign.toml."""
    given = getattr(args, "config", None) or os.environ.get("COUNTERSIGN_CONFIG")
    return Path(given) if given else DEFAULT_CONFIG


def file_data(args: argparse.Namespace) -> dict[str, Any]:
    from bot.config import load

    data = load(config_path(args))
    http = data.get("http", {})
    if getattr(args, "port", None) is not None and isinstance(http, dict):
        # Overridden in the data, not on the model, so the port is validated like the file.
        data["http"] = {**http, "port": args.port}
    return data


def uses_dev_data(args: argparse.Namespace) -> bool:
    """--dev, or no config anywhere while the dev directory holds a store (the demo ran)."""
    if getattr(args, "dev", False):
        return True
    named = getattr(args, "config", None) or os.environ.get("COUNTERSIGN_CONFIG")
    if named or DEFAULT_CONFIG.exists():
        return False
    data_dir: Path = getattr(args, "data_dir", DEFAULT_DEV_DIR)
    if (data_dir / "countersign.db").exists():
        print(
            f"no {DEFAULT_CONFIG} here: using the dev data in {data_dir} (the demo's); "
            "pass --config FILE to use another",
            file=sys.stderr,
        )
        return True
    return False


def settings_and_source(args: argparse.Namespace) -> tuple[Settings, bool]:
    """The settings, and whether they are the dev profile's (over the demo's data)."""
    from bot.config import check_data, parse
    from bot.config.profiles import dev_settings
    from kernel.problems import ProblemsFound

    if uses_dev_data(args):
        port = getattr(args, "port", None)
        return dev_settings(args.data_dir, DEFAULT_PORT if port is None else port), True
    data = file_data(args)
    try:
        return parse(data), False
    except ProblemsFound as refused:
        # every problem at once, as `config check` lists them: the schema's, and what the
        # checks find in the rest (an unset secret) from the file's valid values alone
        _settings, problems = check_data(data, os.environ)
        raise ProblemsFound(problems or refused.problems, refused.code) from None


def settings_of(args: argparse.Namespace) -> Settings:
    return settings_and_source(args)[0]


def settings_if_any(args: argparse.Namespace) -> Settings | None:
    """The config the bot runs with, when there is one here: a kind's schema may depend on
    its table (None: every domain's defaults)."""
    path = config_path(args)
    if not path.exists():
        return None
    from bot.config import read_file

    return read_file(path)


def environ_for(dev: bool) -> Mapping[str, str]:
    """Where secrets are read: the dev profile's are its own (nothing to export first)."""
    from bot.config.profiles import DEV_ENVIRON

    return {**os.environ, **DEV_ENVIRON} if dev else os.environ


def with_store(args: argparse.Namespace, use: Callable[[Any], Coroutine[Any, Any, Any]]) -> Any:
    """Run `use(store)` against the configured store (operator tools, no bot needed)."""
    from store import open_store

    settings = settings_of(args)

    async def go() -> Any:
        store = await open_store(settings.store.url, schema=settings.store.schema_name)
        try:
            return await use(store)
        finally:
            await store.close()

    return asyncio.run(go())
