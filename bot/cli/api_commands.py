"""Commands that talk to a running bot over its HTTP API, as a proposer or a health check."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import os
import sys
import tomllib
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from bot.agents.client import DEFAULT_URL, ApiError, Client, Filed
from bot.api.wire import OperationPage
from bot.cli.common import config_path
from bot.cli.defaults import DEV_TOKEN_ENV, LANG_ENV
from bot.cli.errors import EXIT_API, EXIT_USAGE, CommandError
from bot.cli.render import label, operation_table, operation_text
from cards.strings import Lang
from cards.vocabulary import state_words
from kernel.canonical import loads_strict
from kernel.display import local_zone, zone
from kernel.problems import ProblemsFound
from store import OperationView, State, Until, reached

EXIT_NOT_YET = 3  # show --wait: the time ran out before the operation was what was asked


def client_of(args: argparse.Namespace, *, stdlib: bool = True) -> Client:
    """The client a command acts with: by default over the standard library's HTTP (a command
    makes a call or a few; importing aiohttp would cost more CPU than they do)."""
    url = args.url or os.environ.get("COUNTERSIGN_URL")
    token = args.token or os.environ.get(DEV_TOKEN_ENV)
    path = config_path(args)
    if (not url or not token) and path.exists():
        from bot import config as config_mod  # only then: it loads every kind's settings

        settings = config_mod.read_file(path)
        url = url or http_url(settings.http.host, settings.http.port)
        if not token:
            chosen = [p for p in settings.proposers if args.proposer in (None, p.name)]
            token = os.environ.get(chosen[0].token_env) if chosen else None
    if not token:
        raise CommandError(
            f"no proposer token: pass --token, set {DEV_TOKEN_ENV}, or give --config "
            "with the proposer's token_env exported",
            EXIT_USAGE,
        )
    return Client(url or DEFAULT_URL, token, stdlib=stdlib)


# a wildcard bind is reached on this host's loopback
WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


def http_url(host: str, port: int) -> str:
    """The URL this host reaches a bot bound to `host`:`port` at ([http] of its config)."""
    host = WILDCARDS.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def bot_url(args: argparse.Namespace) -> str:
    """--url, else COUNTERSIGN_URL, else the [http] address of --config (or of
    COUNTERSIGN_CONFIG, or ./countersign.toml when there is one), else the default."""
    given = args.url or os.environ.get("COUNTERSIGN_URL")
    if given:
        return str(given)
    path = config_path(args)
    if not path.exists():
        if getattr(args, "config", None):
            raise CommandError(f"no config file {path}", EXIT_USAGE)
        return DEFAULT_URL
    from bot import config as config_mod  # only then: it loads every kind's settings

    try:
        settings = config_mod.read_file(path)
    except (ProblemsFound, ValueError, OSError) as error:
        raise CommandError(
            f"cannot read the bot's address from {path}: {error}", EXIT_USAGE
        ) from None
    return http_url(settings.http.host, settings.http.port)


def lang_of(args: argparse.Namespace) -> Lang:
    """--lang, else COUNTERSIGN_LANG when it names one, else English."""
    chosen = getattr(args, "lang", None) or os.environ.get(LANG_ENV)
    return "zh" if chosen == "zh" else "en"


def zone_of(args: argparse.Namespace) -> tzinfo:
    """The display zone, as the bot's cards and dashboard use it: the config's [cards]
    timezone where there is a config here, else this machine's (the bot's default too). Read
    from the TOML alone: the whole config package costs more than `show` does."""
    path, name = config_path(args), ""
    try:
        cards = tomllib.loads(path.read_text(encoding="utf-8")).get("cards")
        name = str(cards.get("timezone") or "") if isinstance(cards, dict) else ""
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        pass  # no config here (or none readable): `config check` says what is wrong with it
    try:
        return zone(name)
    except ValueError:
        return local_zone()


@dataclass(frozen=True)
class Reply:
    """What a command got: the API's JSON (as it sent it) and, for a proposal, whether this
    call filed it and what its filing superseded (in a sentence)."""

    body: Any
    answer: BaseModel
    created: bool = False
    supersedes_note: str | None = None
    supersedes: tuple[str, ...] = ()

    @property
    def view(self) -> OperationView:
        """The operation the command answered, as the client read it."""
        assert isinstance(self.answer, OperationView), type(self.answer)
        return self.answer


def reply_of(answer: BaseModel | Filed) -> Reply:
    if isinstance(answer, Filed):
        found = answer.operation
        body = found.model_dump(mode="json", exclude_unset=True)
        superseded = tuple(answer.supersedes)
        return Reply(body, found, answer.created, answer.supersedes_note, superseded)
    return Reply(answer.model_dump(mode="json", exclude_unset=True), answer)


def call(
    args: argparse.Namespace,
    action: Callable[[Client], Coroutine[Any, Any, Reply]],
    human: Callable[[Reply], str],
    code: Callable[[Reply], int] = lambda _reply: 0,
) -> int:
    """Run `action`, print its answer (JSON with --json, else `human`), and exit with
    `code(reply)`; an API error is its message on stderr and EXIT_API."""

    async def run() -> Reply:
        async with client_of(args) as client:
            return await action(client)

    try:
        reply = asyncio.run(run())
    except ApiError as error:
        if args.json:
            fields = list(error.fields)
            failure = {"status": error.status, "code": error.code, "message": error.message}
            print(json.dumps({"error": {**failure, "fields": fields}}))
        print(label("error", lang_of(args), error=str(error)), file=sys.stderr)
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
    lang = lang_of(args)
    if made is not None:  # on stderr: stdout stays the operation (or its JSON)
        print(label("request_id.made", lang, made=made), file=sys.stderr)

    def human(reply: Reply) -> str:
        verb = label("proposed" if reply.created else "proposed.again", lang)
        said = f"{verb}:\n{operation_text(reply.view, lang=lang, tz=zone_of(args))}"
        if not reply.supersedes_note:
            return said
        ids = ", ".join(reply.supersedes)
        note = label("supersession", lang, note=reply.supersedes_note, id=reply.view.id, ids=ids)
        return f"{said}\n{note}"

    async def propose(client: Client) -> Reply:
        return reply_of(await client.propose_json(data))

    return call(args, propose, human)


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

        async def show(client: Client) -> Reply:
            return reply_of(await client.get(args.id))

        return call(args, show, lambda r: operation_text(r.view, lang=lang, tz=zone_of(args)))
    until: Until = args.until or "final"

    def code(reply: Reply) -> int:
        if reached(reply.view, until):
            return 0
        state = state_words(reply.view.state, lang)
        waited_for = label(f"until.{until}", lang)
        said = label("not_yet", lang, until=waited_for, seconds=str(args.wait), state=state)
        print(said, file=sys.stderr)
        return EXIT_NOT_YET

    async def wait(client: Client) -> Reply:
        return reply_of(await client.wait(args.id, until=until, timeout_s=args.wait))

    return call(args, wait, lambda r: operation_text(r.view, lang=lang, tz=zone_of(args)), code)


def cmd_list(args: argparse.Namespace) -> int:
    lang = lang_of(args)

    def human(reply: Reply) -> str:
        assert isinstance(reply.answer, OperationPage), type(reply.answer)
        page = reply.answer
        rows = (
            operation_table(page.items, lang=lang) if page.items else [label("no_operations", lang)]
        )
        if page.has_more:
            rows.append(label("more", lang, cursor=str(page.next_cursor)))
        return "\n".join(rows)

    async def page(client: Client) -> Reply:
        return reply_of(await client.list(state=args.state, limit=args.limit, cursor=args.cursor))

    return call(args, page, human)


def cmd_cancel(args: argparse.Namespace) -> int:
    lang = lang_of(args)
    already: list[bool] = []

    async def cancel(client: Client) -> Reply:
        try:
            return reply_of(await client.cancel(args.id))
        except ApiError as error:
            # The API refuses to cancel twice (409); the proposer's wish holds all the same.
            if error.code != "not_cancellable":
                raise
            shown = await client.get(args.id)
            if shown.state != State.CANCELLED:
                if args.json or lang == "en":  # the API's own words
                    raise error from None
                # said in the reader's words, with the state as `show` says it
                state = state_words(shown.state, lang)
                said = label("not_cancellable", lang, state=state)
                raise dataclasses.replace(error, message=said) from None
            already.append(True)
            return reply_of(shown)

    def human(reply: Reply) -> str:
        verb = label("cancelled.again" if already else "cancelled.now", lang)
        return f"{verb}:\n{operation_text(reply.view, lang=lang, tz=zone_of(args))}"

    def code(_reply: Reply) -> int:
        if already and args.json:
            print(label("cancelled.again", lang), file=sys.stderr)
        return 0

    return call(args, cancel, human, code)


def cmd_health(args: argparse.Namespace) -> int:
    url = bot_url(args).rstrip("/")

    async def fetch() -> tuple[int, Any]:
        async with Client(url, attempts=1, stdlib=True) as client:
            return await client.ready()

    try:
        status, body = asyncio.run(fetch())
    except ApiError as error:
        raise CommandError(f"cannot read {url}/readyz ({error.message})") from None
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
