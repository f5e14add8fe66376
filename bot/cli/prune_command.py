"""`countersign prune [--dry-run]`: history past its `[retention]` window pruned, as
store/retention/prune.py says; the audit log and the operations' record are never touched."""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import TYPE_CHECKING

from bot.cli.common import settings_of, with_store
from bot.config import Settings

if TYPE_CHECKING:  # the store loads only when a command runs (bot/cli/lazy.py)
    from store import Retention


def retention_of(settings: Settings) -> Retention:
    from store import Retention

    kept = settings.retention
    return Retention(
        inbox=timedelta(days=kept.inbox_days),
        card_revisions=timedelta(days=kept.card_revisions_days),
        delivery_attempts=timedelta(days=kept.delivery_attempts_days),
        session_idle=timedelta(seconds=settings.web.session_idle_s),
        session_max=timedelta(seconds=settings.web.session_max_s),
    )


def cmd_prune(args: argparse.Namespace) -> int:
    from store import PruneReport, Store, prune

    retention = retention_of(settings_of(args))

    async def pruned(store: Store) -> PruneReport:
        return await prune(store, retention, dry_run=args.dry_run)

    report: PruneReport = with_store(args, pruned)
    for line in report.lines(args.dry_run):
        print(line)
    if args.dry_run:
        print("nothing was changed (--dry-run)")
    return 0
