"""Commands that talk to a running bot over its HTTP API, as a proposer or a health check."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from bot import config as config_mod
from bot.cli.common import EXIT_API, EXIT_USAGE, CommandError, config_path
from bot.client import ApiClient, ApiError, ApiReply
from bot.profiles import DEV_TOKEN_ENV
from bot.render import operation_row, operation_text

DEFAULT_URL = "http://127.0.0.1:8080"


def client_of(args: argparse.Namespace) -> ApiClient:
    url = args.url or os.environ.get("COUNTERSIGN_URL")
    token = args.token or os.environ.get(DEV_TOKEN_ENV)
    path = config_path(args)
    if (not url or not token) and path.exists():
        settings = config_mod.read_file(path)
        url = url or f"http://{settings.http.host}:{settings.http.port}"
        if not token:
            chosen = [p for p in settings.proposers if args.proposer in (None, p.name)]
            token = os.environ.get(chosen[0].token_env) if chosen else None
    if not token:
        raise CommandError(
            f"no proposer token: pass --token, set {DEV_TOKEN_ENV}, or give --config "
            "with the proposer's token_env exported",
            EXIT_USAGE,
        )
    return ApiClient(url or DEFAULT_URL, token)


def call(
    args: argparse.Namespace,
    action: Callable[[ApiClient], Coroutine[Any, Any, ApiReply]],
    human: Callable[[ApiReply], str],
) -> int:
    try:
        reply = asyncio.run(action(client_of(args)))
    except ApiError as error:
        if args.json:
            fields = list(error.fields)
            failure = {"status": error.status, "code": error.code, "message": error.message}
            print(json.dumps({"error": {**failure, "fields": fields}}))
        print(f"error: {error}", file=sys.stderr)
        return EXIT_API
    print(json.dumps(reply.body, indent=2) if args.json else human(reply))
    return 0


def cmd_propose(args: argparse.Namespace) -> int:
    if args.file == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(args.file).read_bytes()
        except OSError as error:
            raise CommandError(f"cannot read {args.file}: {error.strerror}", EXIT_USAGE) from None

    def human(reply: ApiReply) -> str:
        verb = "proposed" if reply.status == 201 else "already proposed (same request_id)"
        return f"{verb}:\n{operation_text(reply.body)}"

    return call(args, lambda client: client.propose(data), human)


def cmd_show(args: argparse.Namespace) -> int:
    return call(args, lambda c: c.show(args.id, args.wait), lambda r: operation_text(r.body))


def cmd_list(args: argparse.Namespace) -> int:
    def human(reply: ApiReply) -> str:
        rows = [operation_row(item) for item in reply.body["items"]] or ["(no operations)"]
        if reply.body["has_more"]:
            rows.append(f"more: --cursor {reply.body['next_cursor']}")
        return "\n".join(rows)

    return call(args, lambda c: c.list(args.state, args.limit, args.cursor), human)


def cmd_cancel(args: argparse.Namespace) -> int:
    return call(
        args, lambda c: c.cancel(args.id), lambda r: f"cancelled:\n{operation_text(r.body)}"
    )


def cmd_health(args: argparse.Namespace) -> int:
    import aiohttp

    url = (args.url or os.environ.get("COUNTERSIGN_URL") or DEFAULT_URL).rstrip("/")

    async def fetch() -> tuple[int, Any]:
        async with aiohttp.ClientSession() as http, http.get(f"{url}/readyz") as response:
            return response.status, await response.json()

    try:
        status, body = asyncio.run(fetch())
    except (OSError, ValueError) as error:
        raise CommandError(f"cannot read {url}/readyz ({error})") from None
    print(json.dumps(body, indent=2) if args.json else health_text(body))
    return 0 if status == 200 else EXIT_API


def health_text(body: dict[str, Any]) -> str:
    lines = [f"countersign: {body.get('status')}  (config {body.get('config_revision')})"]
    shown = ("mode", "backend", "connected_since", "last_event_at", "events", "card_backlog")
    for name, part in body.get("components", {}).items():
        details = [f"{key} {part[key]}" for key in shown if part.get(key) is not None]
        latency = part.get("ack_latency_ms") or {}
        if latency.get("p50") is not None:
            details.append(f"ack p50 {latency['p50']} ms, p99 {latency['p99']} ms")
        lines.append(f"  {name:<18} {part.get('state'):<22} {'; '.join(details)}")
    return "\n".join(lines)
