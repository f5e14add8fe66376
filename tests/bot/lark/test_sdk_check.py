"""The start-up check names the lark-oapi private parts that moved, and passes on the pinned SDK."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import lark_oapi as lark  # type: ignore[import-untyped]
import lark_oapi.ws.client as lark_ws_client  # type: ignore[import-untyped]
import pytest

from bot.cli.errors import EXIT_API
from bot.lark.sdk_check import TESTED_RANGE, SdkMismatch, check_sdk, sdk_mismatch
from bot.lark.transport import LarkTransport
from tests.support.processes import ENV, ROOT, free_port
from tests.support.waiting import scaled


def test_the_installed_sdk_has_every_part_the_transports_use() -> None:
    assert sdk_mismatch() == []
    check_sdk()  # no error


class MovedClient(lark_ws_client.Client):  # type: ignore[misc]
    """An SDK release in which the reassembly helper and the fragment cache moved."""

    _combine = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        del self._cache


def test_a_moved_part_is_named_with_the_tested_range() -> None:
    assert sdk_mismatch(MovedClient, lark.LogLevel.WARNING) == [
        "Client._combine",
        "Client()._cache",
    ]
    with pytest.raises(SdkMismatch) as refused:
        check_sdk(lark.LogLevel.WARNING, MovedClient)
    message = str(refused.value)
    assert "Client._combine, Client()._cache" in message
    assert f"lark-oapi{TESTED_RANGE}" in message
    assert "\n" not in message  # one line for the operator


def test_the_http_transport_refuses_an_sdk_without_its_helpers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Webhook mode and sign-in build no ws client: the HTTP transport checks its own parts."""
    monkeypatch.delattr("lark_oapi.core.http.transport._build_url")
    with pytest.raises(SdkMismatch) as refused:
        LarkTransport("https://open.larksuite.com", timeout_s=5)
    assert "lark_oapi.core.http.transport._build_url" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_the_tested_range_is_the_pinned_range() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pins = [d for d in project["project"]["dependencies"] if d.startswith("lark-oapi")]
    assert pins == [f"lark-oapi{TESTED_RANGE}"]


def test_run_with_a_moved_sdk_helper_is_one_line_and_no_traceback(tmp_path: Path) -> None:
    """The real command, in a process whose lark-oapi lacks `_build_url`."""
    moved = (
        "import sys, lark_oapi.core.http.transport as t; del t._build_url; "
        "from bot.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    ports = ("--port", str(free_port()), "--sandbox-port", str(free_port()))
    done = subprocess.run(
        [sys.executable, "-c", moved, "run", "--sandbox", "--data-dir", str(tmp_path), *ports],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert done.returncode == EXIT_API, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "_build_url" in errors[0], done.stderr
    assert "Traceback" not in done.stderr
