"""An example service that countersign calls: a tiny billing service whose `refund` action
runs only on a verified, confirmed call, once per Idempotency-Key.

    export BILLING_SIGNING_SECRET=$(openssl rand -hex 32)   # the same value countersign reads
    python -m examples.service.app --port 8700 --secret-env BILLING_SIGNING_SECRET

Routes: POST /countersign/call (the confirmed call), GET /countersign/status (what became of
a key), GET /refunds (the ledger, for people). The ledger and the used keys live in one
SQLite file, written in one transaction per call, so a restart neither forgets a key nor
runs a call twice. `--fail-after-work N` answers the next N calls HTTP 500 *after* the
refund is booked (as a crash between the work and the answer would): countersign then finds
the real outcome through the status endpoint. `--delay-s S` holds every call S seconds between
its arrival and its verification (a slow network): longer than the service's `timeout_s`,
countersign records the call unknown, asks the status endpoint to fence the key, concludes
`not_submitted`, and the held call, verified at last, is refused (409) without booking.

The verification is `workers/domains/service/receiver.py`, which a real service copies.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from aiohttp import web

from workers.domains.service.receiver import FENCE_PARAM, Stored, receive, status

CALL_PATH = "/countersign/call"
STATUS_PATH = "/countersign/status"


class SqliteSeenKeys:
    """Used Idempotency-Keys beside the ledger (one file, one transaction per call)."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.lock = threading.Lock()
        self.db.executescript(
            "PRAGMA journal_mode=WAL;"
            "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL,"
            " status INTEGER, body BLOB);"
            "CREATE TABLE IF NOT EXISTS refunds (key TEXT PRIMARY KEY, order_id TEXT NOT NULL,"
            " amount TEXT NOT NULL, reason TEXT NOT NULL, approved_by TEXT NOT NULL);"
        )

    def begin(self, key: str, fingerprint: str) -> Stored | None:
        # the primary key decides, so two processes sharing the file cannot both run a key
        with self.lock:
            inserted = self.db.execute(
                "INSERT OR IGNORE INTO calls (key, fingerprint) VALUES (?, ?)", (key, fingerprint)
            )
            return None if inserted.rowcount == 1 else self.get(key)

    def finish(self, key: str, status: int, body: bytes) -> None:
        with self.lock:
            self.db.execute(
                "UPDATE calls SET status = ?, body = ? WHERE key = ?", (status, body, key)
            )

    def get(self, key: str) -> Stored | None:
        row = self.db.execute(
            "SELECT fingerprint, status, body FROM calls WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        return Stored(row[0], None if row[1] is None else (row[1], bytes(row[2])))

    def refund(self, key: str, call: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Book the refund with the call's answer, in one transaction."""
        arguments = call.get("arguments") or {}
        order_id, amount = str(arguments.get("order_id")), str(arguments.get("amount"))
        approvers = ", ".join(p.get("name", "?") for p in call.get("confirmed_by") or [])
        with self.lock:
            taken = self.db.execute(
                "SELECT key FROM refunds WHERE order_id = ?", (order_id,)
            ).fetchone()
            if taken is not None:
                answer = {"message": f"order {order_id} was already refunded"}
                self._store(key, 409, answer)
                return 409, answer
            answer = {"refund_id": f"rf_{key[-10:]}", "order_id": order_id, "amount": amount}
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute(
                "INSERT INTO refunds VALUES (?, ?, ?, ?, ?)",
                (key, order_id, amount, str(arguments.get("reason")), approvers),
            )
            self._store(key, 200, answer)
            self.db.execute("COMMIT")
            return 200, answer

    def _store(self, key: str, status: int, answer: dict[str, Any]) -> None:
        body = json.dumps(answer, sort_keys=True).encode()
        self.db.execute("UPDATE calls SET status = ?, body = ? WHERE key = ?", (status, body, key))

    def refunds(self) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT key, order_id, amount, reason, approved_by FROM refunds")
        names = ("key", "order_id", "amount", "reason", "approved_by")
        return [dict(zip(names, row, strict=True)) for row in rows.fetchall()]


@dataclass
class Billing:
    secret: str
    keys: SqliteSeenKeys
    fail_after_work: int = 0  # answer this many calls 500 after booking them
    received: list[dict[str, Any]] = field(default_factory=list)  # every POST, as it came
    # awaited by every call between its arrival and its verification: a slow network
    # (`--delay-s`, or a test's event)
    delay: Callable[[], Awaitable[None]] | None = None

    async def call(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.received.append({"headers": dict(request.headers), "body": body})
        if self.delay is not None:
            await self.delay()
        verdict = receive(self.secret, request.headers, body, self.keys)
        if verdict.answer is not None:
            return _json(*verdict.answer)
        assert verdict.call is not None and verdict.key is not None
        if verdict.call.get("action") != "refund" or not _valid_amount(verdict.call):
            answer = {"message": "this service refunds; it got no valid refund"}
            self.keys.finish(verdict.key, 422, json.dumps(answer).encode())
            return web.json_response(answer, status=422)
        code, answer = self.keys.refund(verdict.key, verdict.call)
        if self.fail_after_work > 0 and code == 200:
            self.fail_after_work -= 1
            return web.json_response({"message": "crashed after the work"}, status=500)
        return web.json_response(answer, status=code)

    async def status(self, request: web.Request) -> web.Response:
        key = request.query.get("idempotency_key", "")
        fence = request.query.get(FENCE_PARAM) == "1"
        return _json(*status(self.secret, request.headers, key, self.keys, fence=fence))

    async def ledger(self, request: web.Request) -> web.Response:
        return web.json_response({"refunds": self.keys.refunds()})


def _valid_amount(call: dict[str, Any]) -> bool:
    amount = (call.get("arguments") or {}).get("amount")
    try:
        return isinstance(amount, str) and Decimal(amount) > 0
    except ArithmeticError:
        return False


def _json(code: int, body: bytes) -> web.Response:
    return web.Response(status=code, body=body, content_type="application/json")


def build_app(billing: Billing) -> web.Application:
    app = web.Application()
    app.router.add_post(CALL_PATH, billing.call)
    app.router.add_get(STATUS_PATH, billing.status)
    app.router.add_get("/refunds", billing.ledger)
    return app


async def serve(billing: Billing, sock: socket.socket, stop: asyncio.Event) -> None:
    """Serve on a bound socket until `stop` (the demo binds it first, to know the port)."""
    runner = web.AppRunner(build_app(billing))
    await runner.setup()
    await web.SockSite(runner, sock).start()
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="an example service countersign calls")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8700)
    parser.add_argument("--secret-env", default="BILLING_SIGNING_SECRET")
    parser.add_argument("--ledger", type=Path, default=Path("var/billing.db"))
    parser.add_argument("--fail-after-work", type=int, default=0)
    parser.add_argument("--delay-s", type=float, default=0.0)
    args = parser.parse_args(argv)
    secret = os.environ.get(args.secret_env, "")
    if not secret:
        parser.error(f"export {args.secret_env} (the signing secret countersign uses)")
    args.ledger.parent.mkdir(parents=True, exist_ok=True)
    billing = Billing(secret, SqliteSeenKeys(args.ledger), args.fail_after_work)
    if args.delay_s > 0:
        delay_s: float = args.delay_s
        billing.delay = lambda: asyncio.sleep(delay_s)
    web.run_app(build_app(billing), host=args.host, port=args.port)


if __name__ == "__main__":
    main()
