"""Commands that talk to a running bot over its HTTP API, as a proposer or a health check."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from bot import config as config_mod
from bot.cli.common import EXIT_API, EXIT_USAGE, CommandError, config_path
from bot.client import ApiClient, ApiError, ApiReply
from bot.profiles import DEV_TOKEN_ENV
from bot.progress import MAX_WAIT_S, Until, reached
from bot.render import operation_table, operation_text
from cards.strings import Lang
from cards.vocabulary import state_words
from store.canonical import loads_strict
from store.problems import ProblemsFound

DEFAULT_URL = "http://127.0.0.1:8080"
LANG_ENV = "COUNTERSIGN_LANG"
EXIT_NOT_YET = 3  # show --wait: the time ran out before the operation was what was asked


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


def lang_of(args: argparse.Namespace) -> Lang:
    """--lang, else COUNTERSIGN_LANG when it names one, else English."""
    chosen = getattr(args, "lang", None) or os.environ.get(LANG_ENV)
    return "zh" if chosen == "zh" else "en"


def call(
    args: argparse.Namespace,
    action: Callable[[ApiClient], Coroutine[Any, Any, ApiReply]],
    human: Callable[[ApiReply], str],
    code: Callable[[ApiReply], int] = lambda _reply: 0,
) -> int:
    """Run `action`, print its answer (JSON with --json, else `human`), and exit with
    `code(reply)`; an API error is its message on stderr and EXIT_API."""
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
    return code(reply)


def cmd_propose(args: argparse.Namespace) -> int:
    if args.file == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(args.file).read_bytes()
        except OSError as error:
            raise CommandError(f"cannot read {args.file}: {error.strerror}", EXIT_USAGE) from None
    data, made = with_request_id(data)
    if made is not None:  # on stderr: stdout stays the operation (or its JSON)
        print(
            f"request_id {made} (made from the file's content: proposing the same content "
            "again reuses it, so a retry never files it twice)",
            file=sys.stderr,
        )
    lang = lang_of(args)

    def human(reply: ApiReply) -> str:
        verb = "proposed" if reply.status == 201 else "already proposed (same request_id)"
        return f"{verb}:\n{operation_text(reply.body, lang=lang)}"

    return call(args, lambda client: client.propose(data), human)


def with_request_id(data: bytes) -> tuple[bytes, str | None]:
    """`data` with a request_id when it is a JSON object without one: "cli-" and the start
    of the content's SHA-256, so the same file always gets the same id. The key goes in
    front of the others and nothing else is touched, so the API still sees every number,
    key and character as written. Anything else is sent as it is (the API says what is
    wrong with it)."""
    try:
        body = loads_strict(data)
        data.decode("utf-8")  # the key is inserted as UTF-8 bytes
    except (ProblemsFound, ValueError):
        return data, None
    if not isinstance(body, dict) or "request_id" in body:
        return data, None
    made = "cli-" + hashlib.sha256(data).hexdigest()[:32]
    opening = data.index(b"{") + 1  # only whitespace (or a BOM) stands before an object
    key = f'"request_id": "{made}"' + (", " if body else "")
    return data[:opening] + key.encode() + data[opening:], made


def cmd_show(args: argparse.Namespace) -> int:
    lang = lang_of(args)
    if args.wait is None:
        if args.until is not None:
            raise CommandError("--until needs --wait N (how long to wait at most)", EXIT_USAGE)
        return call(args, lambda c: c.show(args.id), lambda r: operation_text(r.body, lang=lang))
    until: Until = args.until or "final"

    def code(reply: ApiReply) -> int:
        if reached(reply.body, until):
            return 0
        state = state_words(reply.body["state"], lang)
        print(f"not {until} after {args.wait} s: the operation is {state}", file=sys.stderr)
        return EXIT_NOT_YET

    return call(
        args,
        lambda c: wait_until(c, args.id, until, args.wait),
        lambda r: operation_text(r.body, lang=lang),
        code,
    )


async def wait_until(client: ApiClient, operation_id: str, until: Until, wait_s: int) -> ApiReply:
    """The operation as soon as it is `until`, or as it stands after `wait_s` seconds: long
    polls of at most the API's 60 s each, every one asking the API for the same condition
    (which it answers at once when it already holds, so nothing is missed between two)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while True:
        window = min(MAX_WAIT_S, max(0, math.ceil(deadline - loop.time())))
        reply = await client.show(operation_id, window, until)
        if reached(reply.body, until) or loop.time() >= deadline:
            return reply


def cmd_list(args: argparse.Namespace) -> int:
    lang = lang_of(args)

    def human(reply: ApiReply) -> str:
        items = reply.body["items"]
        rows = operation_table(items, lang=lang) if items else ["(no operations)"]
        if reply.body["has_more"]:
            rows.append(f"more: --cursor {reply.body['next_cursor']}")
        return "\n".join(rows)

    return call(args, lambda c: c.list(args.state, args.limit, args.cursor), human)


def cmd_cancel(args: argparse.Namespace) -> int:
    lang = lang_of(args)
    already: list[bool] = []

    async def cancel(client: ApiClient) -> ApiReply:
        try:
            return await client.cancel(args.id)
        except ApiError as error:
            # The API refuses to cancel twice (409); the proposer's wish holds all the same.
            if error.code != "not_cancellable":
                raise
            shown = await client.show(args.id)
            if shown.body.get("state") != "cancelled":
                raise error from None
            already.append(True)
            return shown

    def human(reply: ApiReply) -> str:
        verb = "already cancelled (nothing changed)" if already else "cancelled"
        return f"{verb}:\n{operation_text(reply.body, lang=lang)}"

    def code(_reply: ApiReply) -> int:
        if already and args.json:
            print("already cancelled (nothing changed)", file=sys.stderr)
        return 0

    return call(args, cancel, human, code)


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
