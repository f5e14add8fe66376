"""The sandbox as a real subprocess (`python -m bot.cli sandbox`) for the browser tests, a
webhook receiver running the UNMODIFIED lark-oapi `EventDispatcherHandler` in a thread
(docs/lark-reference.md §3.2), and sending a card as the bot would, over plain HTTP.

The fixtures are exposed by the conftest.py of each test directory that uses them.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any, Protocol

import lark_oapi as lark  # type: ignore[import-untyped]
import pytest

from tests.support.browser import http
from tests.support.processes import ROOT, free_port

BANNER = "countersign sandbox (a local Lark) on "
START_TIMEOUT_S = 20.0
SHUTDOWN_GRACE_S = 3.0


# -- the sandbox subprocess --------------------------------------------------------------------


def _pump(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


@pytest.fixture
def sandbox_process(tmp_path: Path) -> Iterator[str]:
    """A real `countersign sandbox` on a free port; yields its base URL."""
    port = free_port()
    command = [sys.executable, "-m", "bot.cli", "sandbox", "--port", str(port)]
    command += ["--state", str(tmp_path / "sandbox.json")]
    stderr_path = tmp_path / "sandbox.stderr"
    stderr = stderr_path.open("w")
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True).start()
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:  # the banner line, then the port answering (the banner precedes the bind)
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no banner from the sandbox in {START_TIMEOUT_S} s")
            assert line is not None, f"the sandbox exited: {stderr_path.read_text()}"
            if line.startswith(BANNER):
                break
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                assert process.poll() is None, stderr_path.read_text()
                assert time.monotonic() < deadline, "the sandbox did not start listening"
                time.sleep(0.05)  # readiness probe of a subprocess, not test synchronisation
        yield base
    finally:
        # The browser is closed by now. An SSE handler in app.py only notices a gone client at
        # its next 15 s keep-alive and holds graceful shutdown until then; do not wait for it.
        process.terminate()
        try:
            process.wait(timeout=SHUTDOWN_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        stderr.close()


# -- the bot's webhook receiver (unmodified lark-oapi SDK) -------------------------------------


class HasHandler(Protocol):
    """A receiver: the SDK's EventDispatcherHandler it answers with."""

    handler: Any


StartReceiver = Callable[[HasHandler], str]


@pytest.fixture
def receiver_factory() -> Iterator[StartReceiver]:
    """Start receivers on free ports: factory(receiver) -> card URL."""
    servers: list[ThreadingHTTPServer] = []

    def start(receiver: HasHandler) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = lark.RawRequest()
                raw.uri = self.path
                raw.body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                raw.headers = self.headers  # email.message.Message: case-insensitive .get()
                answer = receiver.handler.do(raw)
                self.send_response(answer.status_code)
                for name, value in (answer.headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.content or b"")))
                self.end_headers()
                self.wfile.write(answer.content or b"")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}/card"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


# -- a card, sent as the bot would (plain HTTP; the browser is tests/support/browser.py) -------


RATE_LIMITED = 230020


def send_card(base: str, app: dict[str, Any], card: dict[str, Any]) -> str:
    status, token = http(
        "POST",
        f"{base}/open-apis/auth/v3/tenant_access_token/internal",
        {"app_id": app["app_id"], "app_secret": app["app_secret"]},
    )
    assert status == 200 and token["code"] == 0, token
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        status, sent = http(
            "POST",
            f"{base}/open-apis/im/v1/messages?receive_id_type=chat_id",
            {"receive_id": "oc_ops", "msg_type": "interactive", "content": json.dumps(card)},
            token=token["tenant_access_token"],
        )
        # Lark allows 5 messages a second per chat (230020): back off and send again, as the
        # bot's client does
        if sent.get("code") != RATE_LIMITED or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status == 200 and sent["code"] == 0, sent
    message_id: str = sent["data"]["message_id"]
    return message_id
