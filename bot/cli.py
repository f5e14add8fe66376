"""`countersign` command line."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

from bot import config as config_mod
from bot.client import ApiClient, ApiError, ApiReply
from bot.heap import startup_heap_frozen
from bot.logs import configure, redact
from bot.profiles import DEV_ENVIRON, DEV_TOKEN, dev_config, dev_settings
from bot.render import operation_row, operation_text
from store.problems import ProblemsFound

DEFAULT_CONFIG = Path("countersign.toml")
DEFAULT_DEV_DIR = Path("var/dev")
EXIT_API = 1
EXIT_USAGE = 2


def _config_path(args: argparse.Namespace) -> Path:
    given = getattr(args, "config", None) or os.environ.get("COUNTERSIGN_CONFIG")
    return Path(given) if given else DEFAULT_CONFIG


def _file_data(args: argparse.Namespace) -> dict[str, Any]:
    data = config_mod.load(_config_path(args))
    http = data.get("http", {})
    if getattr(args, "port", None) is not None and isinstance(http, dict):
        # Overridden in the data, not on the model, so the port is validated like the file.
        data["http"] = {**http, "port": args.port}
    return data


def _settings(args: argparse.Namespace) -> config_mod.Settings:
    if getattr(args, "dev", False):
        return dev_settings(args.data_dir, 8080 if args.port is None else args.port)
    return config_mod.parse(_file_data(args))


def _print_problems(error: ProblemsFound) -> int:
    for problem in error.problems:
        print(problem.line(), file=sys.stderr)
    return EXIT_USAGE


# -- run, config, db ----------------------------------------------------------------------


def _logging() -> None:
    configure()


def cmd_run(args: argparse.Namespace) -> int:
    from bot.server import serve

    _logging()
    if args.sandbox or args.sandbox_url:
        return asyncio.run(_run_with_sandbox(args))
    try:
        if args.dev:
            args.data_dir.mkdir(parents=True, exist_ok=True)
            config = dev_config(
                args.data_dir, 8080 if args.port is None else args.port, args.host or "127.0.0.1"
            )
        else:
            settings = _settings(args)
            if args.host:
                settings = settings.model_copy(
                    update={"http": settings.http.model_copy(update={"host": args.host})}
                )
            config = config_mod.resolve(settings, os.environ)
    except ProblemsFound as error:
        return _print_problems(error)

    def ready(url: str) -> None:
        print(f"countersign API listening on {url}", flush=True)
        if args.dev:
            print(
                f"dev profile: Lark off, store {config.settings.store.url}\n"
                f"  proposer dev-agent, token {DEV_TOKEN!r}; audience ops = oc_ops "
                "(ou_alice, ou_bob)\n"
                f"  try: countersign propose examples/order.json --url {url} --token {DEV_TOKEN}",
                flush=True,
            )

    redact(config.secret_values())
    return asyncio.run(serve(config, on_ready=ready))


def cmd_worker(args: argparse.Namespace) -> int:
    from bot.server import serve_workers

    _logging()
    try:
        config = config_mod.resolve(_settings(args), os.environ)
    except ProblemsFound as error:
        return _print_problems(error)

    def ready() -> None:
        print(
            "countersign worker running: cards, executor, reconciler, expiry, venue clock",
            flush=True,
        )

    redact(config.secret_values())
    return asyncio.run(serve_workers(config, on_ready=ready))


def cmd_demo(args: argparse.Namespace) -> int:
    from bot.demo import run_demo

    _logging()
    if args.script:
        logging.getLogger().setLevel(logging.WARNING)  # the story, not the logs
    return asyncio.run(
        run_demo(
            args.data_dir,
            8080 if args.port is None else args.port,
            args.sandbox_port,
            script=args.script,
        )
    )


async def _run_with_sandbox(args: argparse.Namespace) -> int:
    from bot.devstack import embedded_sandbox, point_webhooks, running_sandbox, sandbox_config
    from bot.server import serve

    args.data_dir.mkdir(parents=True, exist_ok=True)
    port = 8080 if args.port is None else args.port
    host = args.host or "127.0.0.1"
    async with contextlib.AsyncExitStack() as stack:
        if args.sandbox_url:
            sandbox = await running_sandbox(args.sandbox_url)
        else:
            sandbox = await stack.enter_async_context(
                embedded_sandbox(host, args.sandbox_port, args.data_dir / "sandbox.json")
            )
        config = sandbox_config(args.data_dir, port, sandbox, args.lark_mode, host)

        async def ready(url: str) -> None:
            if args.lark_mode == "webhook":
                await point_webhooks(sandbox, url)
            print(f"countersign API listening on {url}", flush=True)
            print(
                f"sandbox (a local Lark): {sandbox.base_url}/sandbox  (lark mode {args.lark_mode})\n"
                f"  store {config.settings.store.url}\n"
                f"  proposer dev-agent, token {DEV_TOKEN!r}; audience ops = oc_ops (ou_alice, ou_bob)\n"
                f"  try: countersign propose examples/order.json --url {url} --token {DEV_TOKEN}\n"
                "  then open the sandbox UI, pick chat Ops, click as Alice",
                flush=True,
            )

        redact(config.secret_values())
        return await serve(config, on_ready=ready)
    return 0


def cmd_config_check(args: argparse.Namespace) -> int:
    environ: Mapping[str, str] = os.environ
    settings: config_mod.Settings | None
    try:
        if args.dev:
            environ = {**os.environ, **DEV_ENVIRON}
            settings = _settings(args)
            problems = config_mod.check(settings, environ)
        else:
            settings, problems = config_mod.check_data(_file_data(args), environ)
    except ProblemsFound as error:
        return _print_problems(error)
    if settings is not None:
        print(json.dumps(config_mod.redacted(settings, environ), indent=2))
    if problems:
        for problem in problems:
            print(problem.line(), file=sys.stderr)
        return EXIT_USAGE
    print("config ok", file=sys.stderr)
    return 0


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    from store.engine import create_engine
    from store.migrate import current_revision, upgrade

    try:
        settings = _settings(args)
    except ProblemsFound as error:
        return _print_problems(error)

    async def go() -> str | None:
        engine = create_engine(settings.store.url, schema=settings.store.schema_name)
        try:
            await upgrade(engine, schema=settings.store.schema_name)
            return await current_revision(engine)
        finally:
            await engine.dispose()

    print(f"database at revision {asyncio.run(go())}")
    return 0


def cmd_reconcile(args: argparse.Namespace) -> int:
    from store.execution import ExecutionLedger

    try:
        queued = _with_store(args, lambda store: ExecutionLedger(store).reconcile_now(args.id))
    except ProblemsFound as error:
        return _print_problems(error)
    if args.id is not None and not queued:
        print(
            f"error: {args.id} has no unknown submission or working order to look at "
            "(unknown id, not executed yet, mid-dispatch, or settled)",
            file=sys.stderr,
        )
        return EXIT_API
    for operation_id in queued:
        print(f"queued for reconciliation: {operation_id}")
    if not queued:
        print("nothing to reconcile")
    return 0


def _with_store(args: argparse.Namespace, use: Callable[[Any], Coroutine[Any, Any, Any]]) -> Any:
    """Run `use(store)` against the configured store (operator tools, no bot needed)."""
    from store.opening import open_store

    settings = _settings(args)

    async def go() -> Any:
        store = await open_store(settings.store.url, schema=settings.store.schema_name)
        try:
            return await use(store)
        finally:
            await store.close()

    return asyncio.run(go())


def cmd_deliveries_list(args: argparse.Namespace) -> int:
    from store.deliveries import DeliveryLedger

    try:
        found = _with_store(
            args,
            lambda store: DeliveryLedger(store).find(
                operation_id=args.operation, state=args.state, limit=args.limit
            ),
        )
    except ProblemsFound as error:
        return _print_problems(error)
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
    from store.deliveries import DeliveryLedger

    try:
        retried = _with_store(args, lambda store: DeliveryLedger(store).retry(args.id))
    except ProblemsFound as error:
        return _print_problems(error)
    if retried is None:
        print(
            f"error: no failed delivery {args.id}: only a failed delivery is replayed "
            "(see `countersign deliveries list --state failed`)",
            file=sys.stderr,
        )
        return EXIT_API
    print(
        f"queued again: {retried.id} ({retried.channel}, op {retried.operation_id}); "
        "the operation is not executed again"
    )
    return 0


def cmd_health(args: argparse.Namespace) -> int:
    import aiohttp

    url = (args.url or os.environ.get("COUNTERSIGN_URL") or "http://127.0.0.1:8080").rstrip("/")

    async def fetch() -> tuple[int, Any]:
        async with aiohttp.ClientSession() as http, http.get(f"{url}/readyz") as response:
            return response.status, await response.json()

    try:
        status, body = asyncio.run(fetch())
    except (OSError, ValueError) as error:
        print(f"error: cannot read {url}/readyz ({error})", file=sys.stderr)
        return EXIT_API
    if args.json:
        print(json.dumps(body, indent=2))
    else:
        print(health_text(body))
    return 0 if status == 200 else EXIT_API


def health_text(body: dict[str, Any]) -> str:
    lines = [f"countersign: {body.get('status')}  (config {body.get('config_revision')})"]
    for name, part in body.get("components", {}).items():
        details = []
        for key in (
            "mode",
            "backend",
            "connected_since",
            "last_event_at",
            "events",
            "card_backlog",
        ):
            if part.get(key) is not None:
                details.append(f"{key} {part[key]}")
        latency = part.get("ack_latency_ms") or {}
        if latency.get("p50") is not None:
            details.append(f"ack p50 {latency['p50']} ms, p99 {latency['p99']} ms")
        lines.append(f"  {name:<18} {part.get('state'):<22} {'; '.join(details)}")
    return "\n".join(lines)


def cmd_venue_orders(args: argparse.Namespace) -> int:
    from workers.domains.finance.venue import venue_orders_text

    try:
        settings = _settings(args)
    except ProblemsFound as error:
        return _print_problems(error)
    path = Path(settings.domains.finance.venue_path)
    try:
        print(asyncio.run(venue_orders_text(path, as_json=args.json, account=args.account)))
    except FileNotFoundError:
        print(
            f"error: no venue state at {path}; it is created when the bot first runs",
            file=sys.stderr,
        )
        return EXIT_API
    return 0


def cmd_sandbox(args: argparse.Namespace) -> int:
    from aiohttp import web

    from bot.sandbox.app import SandboxOptions, build_sandbox
    from bot.sandbox.state import SandboxState, default_state

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    state_file: Path | None = args.state
    if state_file is not None and state_file.exists():
        try:
            state = SandboxState.load(state_file)
        except (OSError, ValueError, TypeError, KeyError) as error:
            print(f"--state: cannot load {state_file} ({error}): fix or remove it", file=sys.stderr)
            return EXIT_USAGE
    else:
        state = default_state()
    app = build_sandbox(state, SandboxOptions(state_file=state_file))
    base = f"http://{args.host}:{args.port}"

    async def serve() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, args.host, args.port).start()
            print(sandbox_banner(state, base), flush=True)  # only once it answers
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
            with startup_heap_frozen():
                await stop.wait()
        finally:
            await runner.cleanup()

    asyncio.run(serve())
    return 0


def sandbox_banner(state: Any, base: str) -> str:
    lines = [f"countersign sandbox (a local Lark) on {base}", f"  web UI:      {base}/sandbox"]
    for app in state.apps.values():
        lines += [
            f"  app:         {app.app_id} (tenant {app.tenant_key})",
            f"  app secret:  {app.app_secret}",
            f"  encrypt key: {app.encrypt_key}",
            f"  verification token: {app.verification_token}",
        ]
    users = ", ".join(f"{u.open_id} ({u.name}, {u.tenant_key})" for u in state.users.values())
    chats = ", ".join(
        f"{c.chat_id} ({c.name}: {', '.join(c.members)})" for c in state.chats.values()
    )
    lines += [f"  users:       {users}", f"  chats:       {chats}"]
    lines.append(f"  OpenAPI domain for lark-oapi: {base}")
    return "\n".join(lines)


# -- API client commands -------------------------------------------------------------------


def _client(args: argparse.Namespace) -> ApiClient:
    url = args.url or os.environ.get("COUNTERSIGN_URL")
    token = args.token or os.environ.get("COUNTERSIGN_TOKEN")
    path = _config_path(args)
    if (not url or not token) and path.exists():
        settings = config_mod.read_file(path)
        url = url or f"http://{settings.http.host}:{settings.http.port}"
        if not token:
            chosen = [p for p in settings.proposers if args.proposer in (None, p.name)]
            token = os.environ.get(chosen[0].token_env) if chosen else None
    if not token:
        raise SystemExit(
            "no proposer token: pass --token, set COUNTERSIGN_TOKEN, or give --config "
            "with the proposer's token_env exported"
        )
    return ApiClient(url or "http://127.0.0.1:8080", token)


def _call(
    args: argparse.Namespace,
    action: Callable[[ApiClient], Coroutine[Any, Any, ApiReply]],
    human: Callable[[ApiReply], str],
) -> int:
    try:
        reply = asyncio.run(action(_client(args)))
    except ApiError as error:
        if args.json:
            print(
                json.dumps(
                    {
                        "error": {
                            "status": error.status,
                            "code": error.code,
                            "message": error.message,
                            "fields": list(error.fields),
                        }
                    }
                )
            )
        print(f"error: {error}", file=sys.stderr)
        return EXIT_API
    except ProblemsFound as error:
        return _print_problems(error)
    print(json.dumps(reply.body, indent=2) if args.json else human(reply))
    return 0


def cmd_propose(args: argparse.Namespace) -> int:
    if args.file == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(args.file).read_bytes()
        except OSError as error:
            print(f"error: cannot read {args.file}: {error.strerror}", file=sys.stderr)
            return EXIT_USAGE

    def human(reply: ApiReply) -> str:
        verb = "proposed" if reply.status == 201 else "already proposed (same request_id)"
        return f"{verb}:\n{operation_text(reply.body)}"

    return _call(args, lambda client: client.propose(data), human)


def cmd_show(args: argparse.Namespace) -> int:
    return _call(args, lambda c: c.show(args.id, args.wait), lambda r: operation_text(r.body))


def cmd_list(args: argparse.Namespace) -> int:
    def human(reply: ApiReply) -> str:
        rows = [operation_row(item) for item in reply.body["items"]] or ["(no operations)"]
        if reply.body["has_more"]:
            rows.append(f"more: --cursor {reply.body['next_cursor']}")
        return "\n".join(rows)

    return _call(args, lambda c: c.list(args.state, args.limit, args.cursor), human)


def cmd_cancel(args: argparse.Namespace) -> int:
    return _call(
        args, lambda c: c.cancel(args.id), lambda r: f"cancelled:\n{operation_text(r.body)}"
    )


# -- parser --------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="countersign", description="Human-confirmed operations over Lark/Feishu cards."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def config_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "--config", help="TOML config file (default ./countersign.toml, env COUNTERSIGN_CONFIG)"
        )
        sub.add_argument("--dev", action="store_true", help="use the built-in dev profile")
        sub.add_argument(
            "--data-dir", type=Path, default=DEFAULT_DEV_DIR, help="dev profile data dir"
        )
        sub.add_argument("--port", type=int, help="HTTP port (overrides the config)")

    run = commands.add_parser("run", help="run the bot")
    config_options(run)
    run.add_argument("--host", help="HTTP host (overrides the config)")
    run.add_argument(
        "--sandbox", action="store_true", help="dev profile plus an in-process sandbox"
    )
    run.add_argument(
        "--sandbox-port", type=int, default=9090, help="port of the in-process sandbox"
    )
    run.add_argument("--sandbox-url", help="use a sandbox that is already running")
    run.add_argument("--lark-mode", choices=("ws", "webhook"), default="ws", help="with --sandbox")
    run.set_defaults(func=cmd_run)

    demo = commands.add_parser(
        "demo", help="sandbox + bot + simulated venue with sample operations to click"
    )
    demo.add_argument("--script", action="store_true", help="click through it and check it")
    demo.add_argument("--data-dir", type=Path, default=DEFAULT_DEV_DIR / "demo")
    demo.add_argument("--port", type=int, help="bot HTTP port (default 8080)")
    demo.add_argument("--sandbox-port", type=int, default=9090)
    demo.set_defaults(func=cmd_demo)

    worker = commands.add_parser(
        "worker", help="run the workers alone (executor, reconciler, cards, expiry)"
    )
    config_options(worker)
    worker.set_defaults(func=cmd_worker)

    reconcile = commands.add_parser(
        "reconcile",
        help="look up unknown submissions and working orders now (a running worker does it)",
    )
    reconcile.add_argument("id", nargs="?", help="one operation (default: all)")
    config_options(reconcile)
    reconcile.set_defaults(func=cmd_reconcile)

    deliveries = commands.add_parser(
        "deliveries", help="result return: replies and webhooks to proposers"
    )
    deliveries_sub = deliveries.add_subparsers(
        dest="deliveries_command", required=True, metavar="ACTION"
    )
    listing = deliveries_sub.add_parser("list", help="newest first")
    listing.add_argument("--state", choices=("pending", "delivered", "failed"))
    listing.add_argument("--operation", help="only this operation's deliveries")
    listing.add_argument("--limit", type=int, default=50)
    listing.add_argument("--json", action="store_true")
    config_options(listing)
    listing.set_defaults(func=cmd_deliveries_list)
    replay = deliveries_sub.add_parser("retry", help="replay a failed delivery (same id)")
    replay.add_argument("id")
    config_options(replay)
    replay.set_defaults(func=cmd_deliveries_retry)

    config_cmd = commands.add_parser("config", help="configuration tools")
    config_sub = config_cmd.add_subparsers(dest="config_command", required=True, metavar="ACTION")
    check = config_sub.add_parser(
        "check", help="print the effective config (secrets redacted) and its problems"
    )
    config_options(check)
    check.set_defaults(func=cmd_config_check)

    db = commands.add_parser("db", help="database tools")
    db_sub = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    up = db_sub.add_parser("upgrade", help="apply migrations")
    config_options(up)
    up.set_defaults(func=cmd_db_upgrade)

    venue = commands.add_parser("venue", help="the simulated venue")
    venue_sub = venue.add_subparsers(dest="venue_command", required=True, metavar="ACTION")
    venue_orders = venue_sub.add_parser("orders", help="orders with client ids and submit counts")
    config_options(venue_orders)
    venue_orders.add_argument("--json", action="store_true")
    venue_orders.add_argument("--account")
    venue_orders.set_defaults(func=cmd_venue_orders)

    health = commands.add_parser("health", help="readiness of a running bot (/readyz)")
    health.add_argument("--url", help="bot URL (env COUNTERSIGN_URL)")
    health.add_argument("--json", action="store_true")
    health.set_defaults(func=cmd_health)

    sandbox = commands.add_parser("sandbox", help="run the local Lark sandbox")
    sandbox.add_argument("--host", default="127.0.0.1")
    sandbox.add_argument("--port", type=int, default=9090)
    sandbox.add_argument("--state", type=Path, help="load/persist sandbox state in this JSON file")
    sandbox.set_defaults(func=cmd_sandbox)

    def client_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--url", help="bot API URL (env COUNTERSIGN_URL)")
        sub.add_argument("--token", help="proposer token (env COUNTERSIGN_TOKEN)")
        sub.add_argument("--config", help="take URL and token from this config")
        sub.add_argument("--proposer", help="which proposer of --config to act as")
        sub.add_argument("--json", action="store_true", help="print JSON")

    propose = commands.add_parser("propose", help="propose an operation from a JSON file or -")
    propose.add_argument("file", metavar="FILE|-")
    client_options(propose)
    propose.set_defaults(func=cmd_propose)

    show = commands.add_parser("show", help="show one operation")
    show.add_argument("id")
    show.add_argument(
        "--wait",
        type=int,
        metavar="N",
        help="first wait up to N seconds (<= 60) for the operation to change",
    )
    client_options(show)
    show.set_defaults(func=cmd_show)

    lister = commands.add_parser("list", help="list operations, newest first")
    lister.add_argument("--state")
    lister.add_argument("--limit", type=int)
    lister.add_argument("--cursor")
    client_options(lister)
    lister.set_defaults(func=cmd_list)

    cancel = commands.add_parser("cancel", help="cancel an unclaimed operation")
    cancel.add_argument("id")
    client_options(cancel)
    cancel.set_defaults(func=cmd_cancel)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
