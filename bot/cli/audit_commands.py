"""`countersign audit verify|export`: the audit log's hash chain, checked in the store or in an
export file, and written out for an auditor (store/audit/)."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from bot.cli.common import with_store
from bot.cli.errors import EXIT_USAGE, CommandError

EXIT_BROKEN_CHAIN = 1
PROGRESS_EVERY = 5_000  # entries between two progress lines on a terminal


def cmd_audit_verify(args: argparse.Namespace) -> int:
    if args.file is not None:
        if args.store:
            raise CommandError("audit verify: give a FILE or --store, not both", EXIT_USAGE)
        return _verify_file(Path(args.file))
    if not args.store:
        raise CommandError(
            "audit verify: name what to check: an export FILE, or --store", EXIT_USAGE
        )
    return _verify_store(args)


def _verify_store(args: argparse.Namespace) -> int:
    from store import AuditChain, ChainCheck, Store

    async def verified(store: Store) -> tuple[ChainCheck, int]:
        chain = AuditChain(store)
        return await chain.verify(), await chain.unlinked()

    check, unlinked = with_store(args, verified)
    waiting = f"; {unlinked} newer entries not linked yet" if unlinked else ""
    if check.problem is not None:
        print(f"audit chain broken: {check.problem} ({check.entries} entries read){waiting}")
        return EXIT_BROKEN_CHAIN
    print(f"audit chain holds: {check.entries} entries, head at entry {check.head_seq}{waiting}")
    return 0


def _verify_file(path: Path) -> int:
    from store import check_export

    try:
        with path.open(encoding="utf-8", newline="") as file:
            check = check_export(read_export(file, str(path)))
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
        moment = datetime.fromisoformat(value)
    except ValueError as error:
        raise CommandError(
            f"audit export: {flag} {value!r} is not an ISO-8601 date or time "
            "(e.g. 2026-12-01 or 2026-12-01T09:00+08:00)",
            EXIT_USAGE,
        ) from error
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


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
