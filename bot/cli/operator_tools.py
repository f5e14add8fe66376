"""Operator tools that work on the store directly, with or without a running bot."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Mapping

from bot import config as config_mod
from bot.cli.common import (
    config_path,
    file_data,
    settings_of,
    uses_dev_data,
    with_store,
)
from bot.cli.errors import EXIT_USAGE, CommandError
from bot.config.profiles import DEV_ENVIRON


def cmd_config_check(args: argparse.Namespace) -> int:
    """The effective config on stdout; on stderr a summary, then every problem in one pass."""
    from bot.config.reachability import store_problem

    environ: Mapping[str, str] = os.environ
    settings: config_mod.Settings | None
    if uses_dev_data(args):
        environ = {**os.environ, **DEV_ENVIRON}
        settings = settings_of(args)
        problems = config_mod.check(settings, environ)
        source = f"the dev profile ({args.data_dir})"
    else:
        settings, problems = config_mod.check_data(file_data(args), environ)
        source = str(config_path(args))
    if settings is not None:
        unreachable = asyncio.run(store_problem(settings.store.url))
        problems = [*problems, unreachable] if unreachable else problems
        print(json.dumps(config_mod.redacted(settings, environ), indent=2))
    if problems:
        count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
        print(f"{source}: {count}; each says what to change:", file=sys.stderr)
        for problem in problems:
            print(problem.line(), file=sys.stderr)
        return EXIT_USAGE
    print(f"config ok: {source}, store reachable", file=sys.stderr)
    return 0


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    from store import create_engine, current_revision, reaching, upgrade

    settings = settings_of(args)

    async def go() -> str | None:
        engine = create_engine(settings.store.url, schema=settings.store.schema_name)
        try:
            with reaching(settings.store.url):
                await current_revision(engine)  # one sentence if the server is not there
            await upgrade(engine, schema=settings.store.schema_name)
            return await current_revision(engine)
        finally:
            await engine.dispose()

    print(f"database at revision {asyncio.run(go())}")
    return 0


def cmd_reconcile(args: argparse.Namespace) -> int:
    from store import ExecutionLedger

    queued = with_store(args, lambda store: ExecutionLedger(store).reconcile_now(args.id))
    if args.id is not None and not queued:
        raise CommandError(
            f"{args.id} has no unknown submission or working order to look at "
            "(unknown id, not executed yet, mid-dispatch, or settled)"
        )
    for operation_id in queued:
        print(f"queued for reconciliation: {operation_id}")
    if not queued:
        print("nothing to reconcile")
    return 0


def cmd_deliveries_list(args: argparse.Namespace) -> int:
    from store import DeliveryLedger

    found = with_store(
        args,
        lambda store: DeliveryLedger(store).find(
            operation_id=args.operation, state=args.state, limit=args.limit
        ),
    )
    if args.json:
        print(json.dumps([delivery.as_json() for delivery in found], indent=2))
        return 0
    for d in found:
        print(
            f"{d.id}  {d.state:<9} {d.channel:<7} {d.stage:<10} op {d.operation_id}  "
            f"attempts {d.attempts}  {d.result or d.last_error or ''}"
        )
    if not found:
        print("(no deliveries)")
    return 0


def cmd_deliveries_retry(args: argparse.Namespace) -> int:
    from store import DeliveryLedger

    retried = with_store(args, lambda store: DeliveryLedger(store).retry(args.id))
    if retried is None:
        raise CommandError(
            f"no failed delivery {args.id}: only a failed delivery is replayed "
            "(see `countersign deliveries list --state failed`)"
        )
    print(
        f"queued again: {retried.id} ({retried.channel}, op {retried.operation_id}); "
        "the operation is not executed again"
    )
    return 0


def cmd_venue_orders(args: argparse.Namespace) -> int:
    """The orders of every domain that keeps a venue of its own (the simulated exchange).
    Such a domain offers `venue_orders(settings, as_json=, account=)` on its domain object;
    it is looked up through the registry, so this command names no domain."""
    from workers.domains import DOMAINS

    settings = settings_of(args)
    listed = 0
    for plugin in DOMAINS.values():
        listing = getattr(plugin.domain, "venue_orders", None)
        if listing is None:
            continue
        domain_settings = settings.domains.for_kind(plugin.kind)
        try:
            text = asyncio.run(listing(domain_settings, as_json=args.json, account=args.account))
        except FileNotFoundError as error:
            raise CommandError(
                f"no venue state ({error}); it is created when the bot first runs"
            ) from None
        print(text)
        listed += 1
    if not listed:
        raise CommandError("no registered domain keeps a venue of its own")
    return 0
