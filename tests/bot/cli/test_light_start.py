"""The CLI starts without importing what a command does not use (issue 34, item 4).

Each case runs `countersign` in a subprocess of this tree and asserts which modules it
loaded (sys.modules when main returns), never how long it took: durations are bench/rest.py's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bot import __version__
from bot.cli import defaults
from tests.support.mcp_client import INITIALIZE

ROOT = Path(__file__).resolve().parents[3]
# what `--version`, `--help` and a usage error must not load: the SDKs, the ORM, HTTP, models
HEAVY = ("lark_oapi", "sqlalchemy", "alembic", "aiohttp", "pydantic", "mcp", "httpx", "asyncio")
# `list` talks to the API: the client and its wire models over the standard library's HTTP;
# no aiohttp, store, config or Lark
NOT_FOR_LIST = (
    "lark_oapi",
    "sqlalchemy",
    "alembic",
    "aiohttp",
    "mcp",
    "jsonschema",
    "workers",
    "bot.config",
)
# `mcp` over stdio reads the kinds' registry and the config (the tools' schemas) and talks to
# the API: no ORM, migrations or Lark, nor the bot's HTTP app, ingress or workers (the MCP SDK
# itself loads its web server, uvicorn, whichever transport serves)
NOT_FOR_MCP = (
    "lark_oapi",
    "sqlalchemy",
    "alembic",
    "bot.app.server",
    "bot.app.workforce",
    "bot.ingress",
    "bot.decide",
    "workers.executor",
    "aiohttp.web",  # the service domain's demo service: only `countersign demo` runs it
)
MCP_SESSION = [
    INITIALIZE,
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]

RUN_AND_LIST = """
import json, sys
from bot.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit_:
    code = exit_.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def cli_env() -> dict[str, str]:
    """This tree, an API nothing listens on, and no config file but what cwd holds."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COUNTERSIGN_URL": "http://127.0.0.1:9"}
    env.pop("COUNTERSIGN_CONFIG", None)
    return env


def loaded(*argv: str, cwd: Path) -> tuple[int, set[str], str]:
    """(exit code, top-level and dotted module names loaded, stdout) of `countersign ARGV`."""
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_LIST, *argv],
        capture_output=True,
        text=True,
        env=cli_env(),
        cwd=cwd,  # no countersign.toml there
        timeout=60,
        check=False,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], set(report["modules"]), done.stdout


def heavy_in(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(
        name for name in names if any(m == name or m.startswith(name + ".") for m in modules)
    )


@pytest.mark.parametrize(
    "argv",
    [("--version",), ("--help",), ("list", "--help"), ("propose", "--help"), ("show",)],
)
def test_parsing_alone_imports_nothing_heavy(argv: tuple[str, ...], tmp_path: Path) -> None:
    code, modules, out = loaded(*argv, cwd=tmp_path)
    assert code in (0, 2)
    # `propose --help` lists the kinds: the registry is read for that help text only
    allowed = ("pydantic", "sqlalchemy", "alembic", "aiohttp", "httpx", "asyncio")
    names = tuple(n for n in HEAVY if n not in allowed) if argv[0] == "propose" else HEAVY
    assert heavy_in(modules, names) == []
    if argv == ("--version",):
        assert out.strip() == f"countersign {__version__}"


def test_list_imports_the_client_alone(tmp_path: Path) -> None:
    # nothing listens on port 9: the call fails (after the client's retries), what it
    # imported to get there is what counts
    code, modules, _out = loaded(
        "list", "--token", "t", "--url", "http://127.0.0.1:9", cwd=tmp_path
    )
    assert code == 1
    assert "bot.agents.client" in modules
    assert heavy_in(modules, NOT_FOR_LIST) == []


def test_mcp_over_stdio_loads_no_store_engine_nor_lark(tmp_path: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", RUN_AND_LIST, "mcp", "--token", "t"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
        cwd=tmp_path,
    ) as mcp:
        assert mcp.stdin is not None and mcp.stdout is not None
        mcp.stdin.write("".join(json.dumps(message) + "\n" for message in MCP_SESSION))
        mcp.stdin.flush()
        answers: dict[int, dict[str, Any]] = {}
        while 2 not in answers:  # both requests answered; then stdin closes and it stops
            line = mcp.stdout.readline()
            assert line, "countersign mcp stopped before answering tools/list"
            answer = json.loads(line)
            answers[answer["id"]] = answer
        _out, err = mcp.communicate(timeout=60)
    report = json.loads(err.strip().splitlines()[-1])
    modules = set(report["modules"])
    assert report["code"] == 0
    assert "propose_operation" in [tool["name"] for tool in answers[2]["result"]["tools"]]
    assert "workers.domains" in modules  # the kinds' registry names the tools' kinds
    assert heavy_in(modules, NOT_FOR_MCP) == []


def test_the_parser_shows_the_profiles_names() -> None:
    from bot.config import profiles

    assert defaults.DEV_TOKEN_ENV == profiles.DEV_TOKEN_ENV
    assert defaults.DEFAULT_DEV_DIR == profiles.DEFAULT_DEV_DIR
