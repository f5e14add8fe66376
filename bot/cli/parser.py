"""The argument parser: every command, its options and the function that runs it (named by
its module, imported only when it runs: bot/cli/lazy.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from bot import __version__
from bot.cli.defaults import DEFAULT_DEV_DIR, DEFAULT_MCP_PORT, DEV_TOKEN_ENV, LANG_ENV
from bot.cli.hl_sandbox_command import add_hl_sandbox
from bot.cli.lazy import Command, Parser


def config_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--config", help="TOML config file (default ./countersign.toml, env COUNTERSIGN_CONFIG)"
    )
    sub.add_argument(
        "--dev",
        action="store_true",
        help=f"use the built-in dev profile (the demo's data in {DEFAULT_DEV_DIR})",
    )
    sub.add_argument("--data-dir", type=Path, default=DEFAULT_DEV_DIR, help="dev profile data dir")
    sub.add_argument("--port", type=int, help="HTTP port (overrides the config)")


def client_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--url", help="bot API URL (env COUNTERSIGN_URL)")
    sub.add_argument("--token", help=f"proposer token (env {DEV_TOKEN_ENV})")
    sub.add_argument("--config", help="take URL and token from this config")
    sub.add_argument("--proposer", help="which proposer of --config to act as")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub.add_argument(
        "--lang", choices=("en", "zh"), help=f"words for people (default en, env {LANG_ENV})"
    )


MAX_SHOW_WAIT_S = 86400  # a day; a longer watch is a loop in a script


def wait_seconds(text: str) -> int:
    """--wait's N: whole seconds, 0..MAX_SHOW_WAIT_S."""
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_SHOW_WAIT_S:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number 0..{MAX_SHOW_WAIT_S}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = Parser(
        prog="countersign", description="Human-confirmed operations over Lark/Feishu cards."
    )
    parser.add_argument("--version", action="version", version=f"countersign {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_serving(commands)
    add_hl_sandbox(commands)
    add_operator_tools(commands)
    add_api_commands(commands)
    return parser


if TYPE_CHECKING:
    # argparse has no public name for what `add_subparsers()` returns (nor is it generic at run time).
    Commands = argparse._SubParsersAction[argparse.ArgumentParser]


def venue_options(sub: argparse.ArgumentParser, when: str) -> None:
    """--venue: where the dev orders go (sim, or the local Hyperliquid served in-process)."""
    sub.add_argument(
        "--venue",
        choices=("sim", "hyperliquid"),
        default="sim",
        help=f"{when}where orders go: the simulated venue (default) or a local Hyperliquid "
        "(hlsandbox, world EMULATOR) started in this process",
    )
    sub.add_argument(
        "--hl-port", type=int, default=3001, help="with --venue hyperliquid: its port (3001)"
    )


def add_serving(commands: Commands) -> None:
    run = commands.add_parser("run", help="run the bot")
    config_options(run)
    run.add_argument("--host", help="HTTP host (overrides the config)")
    run.add_argument(
        "--sandbox",
        action="store_true",
        help="dev profile plus an in-process sandbox; with --config, your config with the "
        "sandbox as its Lark ([lark] filled in)",
    )
    run.add_argument(
        "--sandbox-port", type=int, default=9090, help="port of the in-process sandbox"
    )
    run.add_argument("--sandbox-url", help="use a sandbox that is already running")
    run.add_argument("--lark-mode", choices=("ws", "webhook"), default="ws", help="with --sandbox")
    venue_options(run, "with --dev or --sandbox: ")
    # None: the dev profile's directory; with --sandbox --config, only a given one is written
    run.set_defaults(func=Command("bot.cli.serving", "cmd_run"), data_dir=None)

    demo = commands.add_parser(
        "demo", help="sandbox + bot + simulated venue with sample operations to click"
    )
    demo.add_argument("--script", action="store_true", help="click through it and check it")
    demo.add_argument("--data-dir", type=Path, default=DEFAULT_DEV_DIR)
    demo.add_argument("--port", type=int, help="bot HTTP port (default 8080)")
    demo.add_argument("--sandbox-port", type=int, default=9090)
    venue_options(demo, "")
    demo.set_defaults(func=Command("bot.cli.serving", "cmd_demo"))

    worker = commands.add_parser(
        "worker", help="run the workers alone (executor, reconciler, cards, expiry)"
    )
    config_options(worker)
    worker.set_defaults(func=Command("bot.cli.serving", "cmd_worker"))

    sandbox = commands.add_parser("sandbox", help="run the local Lark sandbox")
    sandbox.add_argument("--host", default="127.0.0.1")
    sandbox.add_argument("--port", type=int, default=9090)
    sandbox.add_argument("--state", type=Path, help="load/persist sandbox state in this JSON file")
    sandbox.set_defaults(func=Command("bot.cli.serving", "cmd_sandbox"))


def add_operator_tools(commands: Commands) -> None:
    reconcile = commands.add_parser(
        "reconcile",
        help="look up unknown submissions and working orders now (a running worker does it)",
    )
    reconcile.add_argument("id", nargs="?", help="one operation (default: all)")
    config_options(reconcile)
    reconcile.set_defaults(func=Command("bot.cli.operator_tools", "cmd_reconcile"))

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
    listing.set_defaults(func=Command("bot.cli.operator_tools", "cmd_deliveries_list"))
    replay = deliveries_sub.add_parser("retry", help="replay a failed delivery (same id)")
    replay.add_argument("id")
    config_options(replay)
    replay.set_defaults(func=Command("bot.cli.operator_tools", "cmd_deliveries_retry"))

    audit = commands.add_parser("audit", help="the audit log's hash chain")
    audit_sub = audit.add_subparsers(dest="audit_command", required=True, metavar="ACTION")
    verify = audit_sub.add_parser(
        "verify", help="recompute the chain; name the first entry that does not fit"
    )
    verify.add_argument(
        "file", nargs="?", metavar="FILE", help="an export (`audit export`), JSON lines or CSV"
    )
    verify.add_argument("--store", action="store_true", help="the chain as the store holds it")
    verify.add_argument(
        "--witness",
        action="store_true",
        help="also check FILE against the heads posted in the audiences' chats (asks Lark)",
    )
    config_options(verify)
    verify.set_defaults(func=Command("bot.cli.audit_commands", "cmd_audit_verify"))
    export = audit_sub.add_parser(
        "export", help="write the chain's entries in chain order, for an auditor (streams)"
    )
    export.add_argument("--since", help="from the first entry at or after this ISO-8601 time")
    export.add_argument("--until", help="up to the first entry at or after this ISO-8601 time")
    export.add_argument(
        "--audience", help="only this audience's entries in full; the others' links only"
    )
    export.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    export.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    config_options(export)
    export.set_defaults(func=Command("bot.cli.audit_commands", "cmd_audit_export"))
    witness = audit_sub.add_parser(
        "witness", help="post the chain's head into every audience's chat now"
    )
    config_options(witness)
    witness.set_defaults(func=Command("bot.cli.audit_commands", "cmd_audit_witness"))

    delegate = commands.add_parser(
        "delegate", help="hand an operator's approval right to another person for a while"
    )
    delegate_sub = delegate.add_subparsers(dest="delegate_command", required=True, metavar="ACTION")
    grant = delegate_sub.add_parser("grant", help="hand a right on (an admin's act, audited)")
    grant.add_argument("--audience", required=True, help="the audience the right is in")
    grant.add_argument("--from", dest="giver", required=True, metavar="OPEN_ID", help="whose")
    grant.add_argument("--to", required=True, metavar="OPEN_ID", help="who may use it")
    grant.add_argument("--until", help="when it ends (ISO-8601; no offset: UTC)")
    grant.add_argument("--days", type=int, help="or: for this many days from now")
    config_options(grant)
    grant.set_defaults(func=Command("bot.cli.delegate_command", "cmd_delegate_grant"))
    revoke = delegate_sub.add_parser("revoke", help="end a delegation now")
    revoke.add_argument("id", help="the delegation's id (`delegate list`)")
    config_options(revoke)
    revoke.set_defaults(func=Command("bot.cli.delegate_command", "cmd_delegate_revoke"))
    listing = delegate_sub.add_parser("list", help="delegations in force (newest first)")
    listing.add_argument("--audience", help="only this audience's")
    listing.add_argument("--all", action="store_true", help="also those revoked or ended")
    config_options(listing)
    listing.set_defaults(func=Command("bot.cli.delegate_command", "cmd_delegate_list"))

    prune_cmd = commands.add_parser(
        "prune", help="prune history past its [retention] window (never the audit record)"
    )
    prune_cmd.add_argument(
        "--dry-run", action="store_true", help="count what would be pruned, change nothing"
    )
    config_options(prune_cmd)
    prune_cmd.set_defaults(func=Command("bot.cli.prune_command", "cmd_prune"))

    config_cmd = commands.add_parser("config", help="configuration tools")
    config_sub = config_cmd.add_subparsers(dest="config_command", required=True, metavar="ACTION")
    check = config_sub.add_parser(
        "check", help="print the effective config (secrets redacted) and its problems"
    )
    config_options(check)
    check.set_defaults(func=Command("bot.cli.operator_tools", "cmd_config_check"))

    db = commands.add_parser("db", help="database tools")
    db_sub = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    up = db_sub.add_parser("upgrade", help="apply migrations")
    config_options(up)
    up.set_defaults(func=Command("bot.cli.operator_tools", "cmd_db_upgrade"))

    venue = commands.add_parser(
        "venue", help="venues: the simulated venue's orders, profiles, qualify"
    )
    venue_sub = venue.add_subparsers(dest="venue_command", required=True, metavar="ACTION")
    venue_orders = venue_sub.add_parser("orders", help="orders with client ids and submit counts")
    config_options(venue_orders)
    venue_orders.add_argument("--json", action="store_true")
    venue_orders.add_argument("--account")
    venue_orders.set_defaults(func=Command("bot.cli.operator_tools", "cmd_venue_orders"))
    add_venue_reads(venue_sub)


def add_venue_reads(venue_sub: Commands) -> None:
    """`venue profile` and `venue qualify` (bot/cli/venue_qualify.py): reads only."""
    profile = venue_sub.add_parser(
        "profile", help="what each configured venue declares (docs/venues.md)"
    )
    profile.add_argument("venue", nargs="?", metavar="VENUE", help="one venue (default: all)")
    config_options(profile)
    profile.add_argument("--json", action="store_true")
    profile.set_defaults(func=Command("bot.cli.venue_qualify", "cmd_venue_profile"))
    qualify = venue_sub.add_parser(
        "qualify",
        help="read an account (never trades) and say what it can carry",
        description="Opens the venue the account names, reads its capabilities, a fresh "
        "observation and the account state, and never submits, cancels or changes anything. "
        "One line per check (ok, or NO with the reason and the fix); exit 0 when all are ok, "
        "1 otherwise. docs/venues.md says what each check means.",
    )
    qualify.add_argument("--account", required=True, help="a [[domains.finance.accounts]] name")
    config_options(qualify)
    qualify.add_argument("--json", action="store_true")
    qualify.set_defaults(func=Command("bot.cli.venue_qualify", "cmd_venue_qualify"))


def propose_description() -> str:
    from bot.agents.kinds import names as kind_names

    return (
        "Propose an operation from a JSON file (or - for stdin). A file without "
        "a request_id gets one made from its content (cli-<sha256 prefix>), printed on "
        "stderr: proposing the same file again reuses it, so a retry after a lost answer "
        "never files the operation twice. To file the same content as a new operation, "
        "give it a request_id of its own. The file is {request_id?, kind, payload, audience, "
        f"expires_in_s?, source?}}; kinds: {', '.join(kind_names())} (`countersign kinds "
        "KIND` shows a kind's payload schema and example payloads)."
    )


def add_api_commands(commands: Commands) -> None:
    health = commands.add_parser("health", help="readiness of a running bot (/readyz)")
    health.add_argument("--url", help="bot URL (env COUNTERSIGN_URL)")
    health.add_argument(
        "--config",
        help="ask the bot this config describes: its [http] host and port (default "
        "./countersign.toml when there is one, env COUNTERSIGN_CONFIG)",
    )
    health.add_argument("--json", action="store_true")
    health.set_defaults(func=Command("bot.cli.api_commands", "cmd_health"))

    propose = commands.add_parser(
        "propose",
        help="propose an operation from a JSON file or -",
        describe=propose_description,  # the kinds' registry is read only to show it
    )
    propose.add_argument("file", metavar="FILE|-")
    client_options(propose)
    propose.set_defaults(func=Command("bot.cli.api_commands", "cmd_propose"))

    show = commands.add_parser("show", help="show one operation")
    show.add_argument("id")
    show.add_argument(
        "--wait",
        type=wait_seconds,
        metavar="N",
        help="wait up to N seconds until the operation is final (or --until decided), then "
        f"show it; exit 3 if it is not by then (N <= {MAX_SHOW_WAIT_S})",
    )
    show.add_argument(
        "--until",
        choices=("final", "decided"),
        help="with --wait: final (default: nothing more will happen by itself) or decided "
        "(no operator decision pending: confirmed, rejected, or closed without one)",
    )
    client_options(show)
    show.set_defaults(func=Command("bot.cli.api_commands", "cmd_show"))

    lister = commands.add_parser("list", help="list operations, newest first")
    lister.add_argument("--state")
    lister.add_argument("--limit", type=int)
    lister.add_argument("--cursor")
    client_options(lister)
    lister.set_defaults(func=Command("bot.cli.api_commands", "cmd_list"))

    mcp = commands.add_parser(
        "mcp",
        help="serve the MCP tools for agents (stdio, or --http)",
        description="An MCP server acting for one proposer (its token from --token, "
        "COUNTERSIGN_TOKEN or --config/--proposer): propose, check, get, wait, list and "
        "cancel operations through the bot's API. It has no confirm tool: operators decide "
        "on the Lark card. docs/agents.md shows how to add it to an MCP client.",
    )
    mcp.add_argument("--url", help="bot API URL (env COUNTERSIGN_URL)")
    mcp.add_argument("--token", help=f"proposer token (env {DEV_TOKEN_ENV})")
    mcp.add_argument("--config", help="take URL and token from this config")
    mcp.add_argument("--proposer", help="which proposer of --config to act as")
    mcp.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="with --http (default 127.0.0.1)")
    mcp.add_argument(
        "--port", type=int, default=DEFAULT_MCP_PORT, help=f"with --http ({DEFAULT_MCP_PORT})"
    )
    mcp.set_defaults(func=Command("bot.cli.mcp_command", "cmd_mcp"))

    listing = commands.add_parser(
        "kinds",
        help="the operation kinds this install takes; with KIND, its schema and examples",
        description="One line per kind: its name, simulated or live, whether it moves an "
        "amount (approval rules by amount), its config table. With KIND: its payload JSON "
        "schema (as the config here shapes it) and example payloads that file as shown "
        "against config.example.toml, as JSON.",
    )
    listing.add_argument("kind", nargs="?", metavar="KIND")
    listing.add_argument("--config", help="shape schemas by this config (default as for run)")
    listing.add_argument("--json", action="store_true", help="print the list as JSON")
    listing.set_defaults(func=Command("bot.cli.kinds_command", "cmd_kinds"))

    cancel = commands.add_parser("cancel", help="cancel an unclaimed operation")
    cancel.add_argument("id")
    client_options(cancel)
    cancel.set_defaults(func=Command("bot.cli.api_commands", "cmd_cancel"))
