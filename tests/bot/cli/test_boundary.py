"""The CLI's one error boundary, through the real `countersign` process.

Each expected failure is one line on stderr and an exit code, never a traceback.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import ENV, ROOT, cli, free_port


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A port that is taken: it accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        sock.setblocking(False)
        yield sock


def port_of(sock: socket.socket) -> int:
    port: int = sock.getsockname()[1]
    return port


def no_traceback(err: str) -> bool:
    return "Traceback" not in err


async def test_a_busy_port_is_one_line_naming_the_fix(
    listener: socket.socket, tmp_path: Path
) -> None:
    port = str(port_of(listener))
    bot = await cli("run", "--dev", "--data-dir", str(tmp_path), "--port", port)
    sandbox = await cli("sandbox", "--port", port)
    # what `make run` starts: the demo's bot port busy, and then its sandbox port
    demo = await cli("demo", "--data-dir", str(tmp_path / "demo"), "--port", port)
    demo_sandbox = await cli(
        "demo",
        "--data-dir",
        str(tmp_path / "demo2"),
        "--port",
        str(free_port()),
        "--sandbox-port",
        port,
    )
    for result in (bot, sandbox, demo, demo_sandbox):
        assert result.code == 2 and no_traceback(result.err)
        last = result.err.strip().splitlines()[-1]
        assert last.startswith("error: ") and "address already in use" in last
        assert port in last and "choose another port" in last


async def test_a_directory_given_as_config_names_the_option(tmp_path: Path) -> None:
    expected = f"--config: {tmp_path} is a directory: pass the TOML file inside it"
    for command in (("config", "check"), ("run",), ("db", "upgrade"), ("venue", "orders")):
        result = await cli(*command, "--config", str(tmp_path))
        assert result.code == 2 and no_traceback(result.err), command
        assert result.err.strip() == expected, command


def ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


STARTING_CONFIG = """
[store]
url = "{url}"
[lark]
mode = "off"
[[audiences]]
name = "ops"
chat_id = "oc_ops"
operators = ["ou_alice"]
[[proposers]]
name = "agent"
token_env = "BOUNDARY_TEST_TOKEN"
kinds = ["*"]
audiences = ["*"]
"""


async def test_a_store_that_cannot_be_reached_is_the_sentence_config_check_gives(
    tmp_path: Path,
) -> None:
    """Every command that opens the store says what `config check` says, and no traceback:
    a PostgreSQL nobody listens for, and a SQLite file under a file."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    stores = {
        f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/test": "nothing listens at",
        f"sqlite+aiosqlite:///{blocker}/countersign.db": "is not a writable directory",
    }
    env = {**ENV, "BOUNDARY_TEST_TOKEN": "t" * 32}
    for url, words in stores.items():
        config = tmp_path / "countersign.toml"
        config.write_text(STARTING_CONFIG.format(url=url))
        checked = await cli("config", "check", "--config", str(config), env=env)
        [sentence] = [line for line in checked.err.splitlines() if words in line]
        for command in (
            ("run",),
            ("worker",),
            ("db", "upgrade"),
            ("reconcile",),
            ("audit", "verify", "--store"),
            ("prune", "--dry-run"),
        ):
            result = await cli(*command, "--config", str(config), env=env)
            assert result.code == 2 and no_traceback(result.err), (command, result.err)
            assert result.err.strip() == f"error: {sentence}", (command, result.err)


@pytest.mark.parametrize("started_ignoring_sigint", [False, True])
async def test_ctrl_c_while_waiting_is_interrupted_not_a_traceback(
    listener: socket.socket, started_ignoring_sigint: bool
) -> None:
    """`show --wait` against a server that never answers; SIGINT once the request arrived.
    Also when its parent started it with SIGINT ignored (`cmd &` in a script, some process
    managers): the CLI restores Ctrl-C on start, or nothing but SIGKILL would stop it."""
    url = f"http://127.0.0.1:{port_of(listener)}"
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "bot.cli", "show", "op_x", "--wait", "30"),
        *("--url", url, "--token", "any"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=ROOT,
        env=ENV,
        preexec_fn=ignore_sigint if started_ignoring_sigint else None,
    )
    loop = asyncio.get_running_loop()
    connection, _ = await asyncio.wait_for(loop.sock_accept(listener), 30)
    with connection:
        # the request itself, not only a connection (which any process could open), so the
        # command is waiting for its answer when Ctrl-C comes
        head = await asyncio.wait_for(loop.sock_recv(connection, 4096), 30)
        assert head.startswith(b"GET /api/v1/operations/op_x"), head
        process.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 130
    assert (out, err) == (b"", b"interrupted\n")


async def test_a_reader_that_closed_the_pipe_ends_it_quietly(tmp_path: Path) -> None:
    """`countersign config check --dev | head -0`: nothing on stderr, SIGPIPE's exit code."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "bot.cli", "config", "check", "--dev"),
            *("--data-dir", str(tmp_path)),
            stdout=write_end,
            stderr=asyncio.subprocess.PIPE,
            cwd=ROOT,
            env=ENV,
        )
    finally:
        os.close(write_end)
    _, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 141 and err == b""
