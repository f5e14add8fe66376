"""`countersign audit verify|export`: the audit log's hash chain, checked in the store or in an
export file, and written out for an auditor (store/audit/)."""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from bot.cli.common import environ_for, settings_and_source, with_store
from bot.cli.errors import EXIT_USAGE, CommandError
from kernel.timeutil import given_utc, iso_utc, utc_now
from store import Witness, witnessed_head

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.lark.api import LarkApi

EXIT_BROKEN_CHAIN = 1
PROGRESS_EVERY = 5_000  # entries between two progress lines on a terminal


def cmd_audit_verify(args: argparse.Namespace) -> int:
    if args.file is not None:
        if args.store:
            raise CommandError("audit verify: give a FILE or --store, not both", EXIT_USAGE)
        return _verify_file(Path(args.file), args if args.witness else None)
    if args.witness:
        raise CommandError(
            "audit verify: --witness checks an export FILE against the heads in Lark", EXIT_USAGE
        )
    if not args.store:
        raise CommandError(
            "audit verify: name what to check: an export FILE, or --store", EXIT_USAGE
        )
    return _verify_store(args)


def _verify_store(args: argparse.Namespace) -> int:
    from store import AuditChain, ChainCheck, PolicyLedger, Store

    async def verified(store: Store) -> tuple[ChainCheck, int, tuple[int, str | None]]:
        chain = AuditChain(store)
        return await chain.verify(), await chain.unlinked(), await PolicyLedger(store).check()

    check, unlinked, (versions, policy_problem) = with_store(args, verified)
    waiting = f"; {unlinked} newer entries not linked yet" if unlinked else ""
    if check.problem is not None:
        print(f"audit chain broken: {check.problem} ({check.entries} entries read){waiting}")
        return EXIT_BROKEN_CHAIN
    if policy_problem is not None:
        print(f"audit chain broken: {policy_problem} ({versions} policy versions read)")
        return EXIT_BROKEN_CHAIN
    print(
        f"audit chain holds: {check.entries} entries, head at entry {check.head_seq}, "
        f"{versions} policy versions{waiting}"
    )
    return 0


def _verify_file(path: Path, witness_args: argparse.Namespace | None) -> int:
    from store import check_export

    witnesses: dict[int, list[Witness]] | None = None
    if witness_args is not None:
        witnesses = _witnessed_heads(witness_args, _first_moment(path))
    try:
        with path.open(encoding="utf-8", newline="") as file:
            check = check_export(read_export(file, str(path)), witnesses)
    except OSError as error:
        raise CommandError(
            f"audit verify: cannot read {path}: {error.strerror}", EXIT_USAGE
        ) from error
    if check.entries == 0:
        raise CommandError(f"audit verify: {path} holds no entries", EXIT_USAGE)
    span = f"entries {check.first_seq} to {check.last_seq}"
    hidden = f", {check.redacted} of them redacted" if check.redacted else ""
    if check.problem is not None:
        print(f"export broken: {check.problem} ({check.entries} entries read)")
        return EXIT_BROKEN_CHAIN
    print(f"export holds: {check.entries} entries ({span}{hidden}), last hash {check.last_hash}")
    if witnesses is not None:
        if not check.witnessed:
            heads = sorted(witnesses)
            seen = f" (Lark holds heads at entries {', '.join(map(str, heads))})" if heads else ""
            print(
                f"no head witnessed in Lark falls in {span}{seen}: nothing outside the store vouches for it"
            )
            return EXIT_BROKEN_CHAIN
        latest = max(check.witnessed, key=lambda w: w.seq)
        print(
            f"witnessed: {len(check.witnessed)} heads Lark holds match, the latest entry "
            f"{latest.seq} in {latest.chat_id} at {latest.posted_at}"
        )
    return 0


def _first_moment(path: Path) -> datetime | None:
    """When the export's first entry was written: no head before it can fall inside it."""
    try:
        with path.open(encoding="utf-8", newline="") as file:
            first = next(read_export(file, str(path)), None)
    except OSError:
        return None  # the check itself says why it cannot read the file
    if first is None or not first.get("at"):
        return None
    return datetime.fromisoformat(str(first["at"]))


def _witnessed_heads(args: argparse.Namespace, since: datetime | None) -> dict[int, list[Witness]]:
    """Every head line this app posted into the audiences' chats since `since`, by entry."""
    settings, api = _lark(args, "audit verify --witness")
    app_id = settings.lark.app_id

    async def read() -> dict[int, list[Witness]]:
        found: dict[int, list[Witness]] = {}
        try:
            for chat in settings.witness_chats():
                since_s = int(since.timestamp()) if since else 0
                async for item in api.chat_history(chat, since_s):
                    witness = _witness_of(item, app_id)
                    if witness is not None:
                        found.setdefault(witness.seq, []).append(witness)
        finally:
            await api.close()
        return found

    return asyncio.run(read())


def _witness_of(item: dict[str, Any], app_id: str) -> Witness | None:
    """A head line, if `item` is one this app sent (anyone may type a line; only the app's
    count)."""
    sender = item.get("sender") or {}
    if sender.get("sender_type") != "app" or sender.get("id") != app_id:
        return None
    if item.get("msg_type") != "text":
        return None
    try:
        text = json.loads((item.get("body") or {}).get("content") or "{}").get("text", "")
    except (ValueError, AttributeError):
        return None
    head = witnessed_head(str(text))
    if head is None:
        return None
    posted = datetime.fromtimestamp(int(item.get("create_time") or 0) / 1000, UTC)
    return Witness(
        head[0], head[1], str(item.get("chat_id")), str(item.get("message_id")), iso_utc(posted)
    )


def _lark(args: argparse.Namespace, what: str) -> tuple[Settings, LarkApi]:
    """The config's settings and a Lark client as the bot's app."""
    from bot.app.workers_serving import lark_api
    from bot.config import resolve

    settings, dev = settings_and_source(args)
    api = lark_api(resolve(settings, environ_for(dev)))
    if api is None:
        raise CommandError(f"{what}: lark.mode is off: there is no Lark to ask", EXIT_USAGE)
    if not settings.witness_chats():
        raise CommandError(f"{what}: no audience chat is configured ([[audiences]])", EXIT_USAGE)
    return settings, api


def cmd_audit_witness(args: argparse.Namespace) -> int:
    """Post the chain head into every audience's chat now."""
    from store import AuditChain, Store
    from workers.audit_witness import witness_head

    settings, api = _lark(args, "audit witness")

    async def witness(store: Store) -> tuple[int, list[str]]:
        try:
            return await witness_head(AuditChain(store), api, settings.witness_chats(), utc_now())
        finally:
            await api.close()

    seq, posted = with_store(args, witness)
    if seq == 0:
        print("the audit chain is empty: nothing to witness yet")
        return 0
    print(
        f"witnessed the audit chain head (entry {seq}) in {len(posted)} chats: {', '.join(posted)}"
    )
    return 0


def read_export(file: IO[str], name: str) -> Iterator[dict[str, Any]]:
    """An export's records, one at a time: JSON lines, or CSV with its header row."""
    from store import EXPORT_FIELDS

    first = file.read(1)
    file.seek(0)
    lines: Iterator[dict[str, Any]]
    if first == "{":
        lines = (_json_record(text, name, number) for number, text in enumerate(file, 1))
    else:
        lines = csv.DictReader(file)
    for number, record in enumerate(lines, 1):
        missing = [field for field in EXPORT_FIELDS if field not in record]
        if missing or not str(record.get("seq", "")).isdigit():
            what = f"no {', '.join(missing)}" if missing else "its seq is not a number"
            raise CommandError(
                f"audit verify: {name} record {number} is not an export entry ({what}); "
                "verify a file written by `countersign audit export`",
                EXIT_USAGE,
            )
        yield record


def _json_record(text: str, name: str, number: int) -> dict[str, Any]:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise CommandError(
            f"audit verify: {name} line {number} is not JSON ({error.msg})", EXIT_USAGE
        ) from error
    if not isinstance(record, dict):
        raise CommandError(f"audit verify: {name} line {number} is not an object", EXIT_USAGE)
    return record


def cmd_audit_export(args: argparse.Namespace) -> int:
    from store import EXPORT_FIELDS, AuditChain, ExportWindow, Store

    window = ExportWindow(
        since=_moment(args.since, "--since"),
        until=_moment(args.until, "--until"),
        audience=args.audience,
    )
    if window.since and window.until and window.since >= window.until:
        raise CommandError("audit export: --since must be before --until", EXIT_USAGE)
    with ExitStack() as closing:
        out: IO[str] = (
            closing.enter_context(open(args.out, "w", encoding="utf-8", newline=""))
            if args.out
            else sys.stdout
        )
        write = _writer(out, args.format, EXPORT_FIELDS)

        async def export(store: Store) -> int:
            chain = AuditChain(store)
            total, _ = await chain.head()
            return await chain.export(window, _with_progress(write, total))

        count = with_store(args, export)
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    if args.out:
        print(f"exported {count} entries to {args.out}", file=sys.stderr)
    return 0


def _moment(value: str | None, flag: str) -> datetime | None:
    """An ISO-8601 date or time; without an offset it is UTC."""
    if value is None:
        return None
    try:
        return given_utc(value)
    except ValueError as error:
        raise CommandError(
            f"audit export: {flag} {value!r} is not an ISO-8601 date or time "
            "(e.g. 2026-12-01 or 2026-12-01T09:00+08:00)",
            EXIT_USAGE,
        ) from error


def _writer(out: IO[str], form: str, fields: tuple[str, ...]) -> Callable[[dict[str, Any]], None]:
    if form == "csv":
        rows = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
        rows.writeheader()
        return lambda record: rows.writerow(
            {
                k: "" if v is None else str(v).lower() if isinstance(v, bool) else v
                for k, v in record.items()
            }
        )

    def line(record: dict[str, Any]) -> None:
        out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")

    return line


def _with_progress(
    write: Callable[[dict[str, Any]], None], total: int
) -> Callable[[dict[str, Any]], None]:
    """`write`, saying on a terminal how far along the chain the export has read."""
    if not sys.stderr.isatty():
        return write
    done = 0

    def counted(record: dict[str, Any]) -> None:
        nonlocal done
        write(record)
        done += 1
        if done % PROGRESS_EVERY == 0:
            sys.stderr.write(
                f"\rexported {done} entries (chain at entry {record['seq']} of {total})"
            )
            sys.stderr.flush()

    return counted
