"""Commands that serve until stopped: the bot, the workers alone, the demo, the sandbox."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import logging
import os
from collections.abc import Callable, Coroutine
from typing import Any

from bot import config as config_mod
from bot.app.logs import configure, redact
from bot.cli.common import DEFAULT_PORT, environ_for, settings_and_source
from bot.cli.errors import EXIT_USAGE, CommandError
from bot.config.profiles import DEFAULT_DEV_DIR, DEV_TOKEN, DEV_TOKEN_ENV, dev_config


def cmd_run(args: argparse.Namespace) -> int:
    from bot.app.server import serve

    configure()
    # --data-dir's default applies to the dev profile; given with --sandbox --config, it
    # keeps the sandbox's state (without it, nothing is written outside the config's paths)
    args.data_dir_given = args.data_dir is not None
    if args.data_dir is None:
        args.data_dir = DEFAULT_DEV_DIR
    if args.venue == "hyperliquid" and args.config and (args.sandbox or args.sandbox_url):
        raise CommandError(
            "--venue hyperliquid: only with the dev profile; with --config, name the venue "
            "in [domains.finance] (docs/venues.md)",
            EXIT_USAGE,
        )
    if args.venue == "hyperliquid" and not (args.dev or args.sandbox or args.sandbox_url):
        raise CommandError(
            "--venue hyperliquid: only with --dev or --sandbox (the dev profile); with a "
            "config file, name the venue in [domains.finance] (docs/venues.md)",
            EXIT_USAGE,
        )
    if args.venue == "hyperliquid":
        hyperliquid_sdk_present()
    if args.sandbox or args.sandbox_url:
        return on_hl_port(run_with_sandbox(args))
    if args.dev:
        args.data_dir.mkdir(parents=True, exist_ok=True)
        config = dev_config(
            args.data_dir,
            DEFAULT_PORT if args.port is None else args.port,
            args.host or "127.0.0.1",
        )
    else:
        settings, dev = settings_and_source(args)
        if args.host:
            settings = settings.model_copy(
                update={"http": settings.http.model_copy(update={"host": args.host})}
            )
        config = config_mod.resolve(settings, environ_for(dev))

    def ready(url: str) -> None:
        print(f"countersign API listening on {url}", flush=True)
        if args.dev:
            print(
                f"dev profile: Lark off, store {config.settings.store.url}\n"
                f"  proposer dev-agent, token {DEV_TOKEN!r}; audience ops = oc_ops "
                "(ou_alice, ou_bob)\n"
                f"  try: {DEV_TOKEN_ENV}={DEV_TOKEN} countersign propose examples/order.json "
                f"--url {url}",
                flush=True,
            )

    if args.venue == "hyperliquid":
        return on_hl_port(serve_on_emulator(args, config, ready))
    redact(config.secret_values())
    return asyncio.run(serve(config, on_ready=ready))


async def serve_on_emulator(
    args: argparse.Namespace, config: config_mod.Config, ready: Callable[[str], Any]
) -> int:
    """`run --dev --venue hyperliquid`: the dev profile trading on a local Hyperliquid
    served in this process until the bot stops."""
    from bot.app.devstack import emulated_hyperliquid, with_emulated_finance
    from bot.app.server import serve

    async with emulated_hyperliquid(args.host or "127.0.0.1", args.hl_port) as emulated:
        print(emulated.banner(), flush=True)
        config, environ = with_emulated_finance(config, emulated, args.data_dir)
        os.environ.update(environ)  # the worker process inherits the agent key from here
        redact([*config.secret_values(), *environ.values()])
        return await serve(config, on_ready=ready)


def hyperliquid_sdk_present() -> None:
    """One line saying what to install when the Hyperliquid SDK is missing."""
    from bot.cli.hl_sandbox_command import INSTALL_HINT, SDK_MODULES

    try:
        for module in SDK_MODULES:
            importlib.import_module(module)
    except ModuleNotFoundError:
        raise CommandError(INSTALL_HINT, EXIT_USAGE) from None


def cmd_worker(args: argparse.Namespace) -> int:
    from bot.app.workers_serving import serve_workers

    configure()
    settings, dev = settings_and_source(args)
    config = config_mod.resolve(settings, environ_for(dev))

    def ready() -> None:
        print(
            "countersign worker running: cards, executor, reconciler, expiry, venue clock",
            flush=True,
        )

    redact(config.secret_values())
    return asyncio.run(serve_workers(config, on_ready=ready))


def cmd_demo(args: argparse.Namespace) -> int:
    from bot.app.demo import run_demo

    configure()
    if args.venue == "hyperliquid":
        hyperliquid_sdk_present()
    if args.script:
        logging.getLogger().setLevel(logging.WARNING)  # the story, not the logs
    return on_hl_port(
        run_demo(
            args.data_dir,
            DEFAULT_PORT if args.port is None else args.port,
            args.sandbox_port,
            script=args.script,
            venue=args.venue,
            hl_port=args.hl_port,
        )
    )


def on_hl_port(main: Coroutine[Any, Any, int]) -> int:
    """`main` run; a local Hyperliquid that cannot listen is one line naming --hl-port."""
    from bot.app.devstack import HlPortUnavailable

    try:
        return asyncio.run(main)
    except HlPortUnavailable as error:
        raise CommandError(str(error), EXIT_USAGE) from None


async def run_with_sandbox(args: argparse.Namespace) -> int:
    from bot.app.devstack import (
        embedded_sandbox,
        point_webhooks,
        register_sign_in,
        running_sandbox,
        sandbox_config,
    )
    from bot.app.server import serve

    own = bool(args.config)  # your config, the sandbox as its Lark (bot/app/sandbox_lark.py)
    keep_state = args.data_dir_given or not own
    if keep_state:
        args.data_dir.mkdir(parents=True, exist_ok=True)
    port = DEFAULT_PORT if args.port is None else args.port
    async with contextlib.AsyncExitStack() as stack:
        settings = own_settings(args) if own else None
        host = args.host or (settings.http.host if settings else "127.0.0.1")
        if args.sandbox_url:
            sandbox = await running_sandbox(args.sandbox_url)
        else:
            state_file = args.data_dir / "sandbox.json" if keep_state else None
            sandbox = await stack.enter_async_context(
                embedded_sandbox(host, args.sandbox_port, state_file)
            )
        if settings is not None:
            from bot.app.sandbox_lark import own_config_on_sandbox

            config = own_config_on_sandbox(settings, sandbox, args.lark_mode, os.environ)
        else:
            config = sandbox_config(args.data_dir, port, sandbox, args.lark_mode, host)
        secrets = config.secret_values()
        if args.venue == "hyperliquid":
            from bot.app.devstack import emulated_hyperliquid, with_emulated_finance

            emulated = await stack.enter_async_context(emulated_hyperliquid(host, args.hl_port))
            print(emulated.banner(), flush=True)
            config, environ = with_emulated_finance(config, emulated, args.data_dir)
            os.environ.update(environ)  # the worker process inherits the agent key from here
            secrets = [*config.secret_values(), *environ.values()]
        if config.settings.web.sign_in:
            await register_sign_in(sandbox, config)

        async def ready(url: str) -> None:
            if args.lark_mode == "webhook":
                await point_webhooks(sandbox, url)
            print(f"countersign API listening on {url}", flush=True)
            if own:
                print(own_banner(sandbox.base_url, args.lark_mode, args.config), flush=True)
                return
            print(
                f"sandbox (a local Lark): {sandbox.base_url}/sandbox  (lark mode {args.lark_mode})\n"
                f"  store {config.settings.store.url}\n"
                f"  proposer dev-agent, token {DEV_TOKEN!r}; audience ops = oc_ops (ou_alice, ou_bob)\n"
                f"  try: {DEV_TOKEN_ENV}={DEV_TOKEN} countersign propose examples/order.json "
                f"--url {url}\n"
                "  then open the sandbox UI, pick chat Ops, click as Alice",
                flush=True,
            )

        redact(secrets)
        return await serve(config, on_ready=ready)
    return 0


def own_settings(args: argparse.Namespace) -> config_mod.Settings:
    """--config's settings for `run --sandbox --config` (--port and --host applied)."""
    settings, _dev = settings_and_source(args)
    if args.host:
        settings = settings.model_copy(
            update={"http": settings.http.model_copy(update={"host": args.host})}
        )
    return settings


def own_banner(base_url: str, mode: str, config: str) -> str:
    return (
        f"sandbox (a local Lark): {base_url}/sandbox  (lark mode {mode})\n"
        f"  {config} runs with the sandbox as its Lark: [lark] app id, tenant, base URL and "
        "secrets are the sandbox's;\n"
        "  its chats oc_ops, oc_acme, oc_other and users ou_alice, ou_bob, ou_carol, "
        "ou_mallory are what your [[audiences]] can name"
    )


def cmd_sandbox(args: argparse.Namespace) -> int:
    from bot.app.devstack import SandboxStateUnreadable, serve_sandbox

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        asyncio.run(serve_sandbox(args.host, args.port, args.state))
    except SandboxStateUnreadable as error:
        raise CommandError(f"--state: {error}", EXIT_USAGE) from None
    return 0
