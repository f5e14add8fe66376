"""lark-oapi one namespace at a time (bot/lark/namespaces.py): the bot's Lark modules load
the IM and auth namespaces and the long connection, not every API; the SDK stays whole for
whoever reads from it; the worker child loads no HTTP app, ingress nor long connection. Module sets are asserted in fresh subprocesses, never durations."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lark_oapi.client import _validate_domain  # type: ignore[import-untyped]

from bot.lark.namespaces import gathers
from bot.lark.transport import checked_domain

ROOT = Path(__file__).resolve().parents[3]


def run(code: str, tmp_path: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
        timeout=120,
        check=True,
    )
    answer: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def test_the_bots_lark_modules_load_only_their_namespaces(tmp_path: Path) -> None:
    code = """
import json, sys
import bot.lark.api, bot.lark.tokens, bot.lark.transport, bot.lark.webhook, bot.lark.ws
from bot.lark.sdk_check import check_sdk
from bot.lark.transport import LarkTransport
check_sdk()
LarkTransport("http://127.0.0.1:9", timeout_s=1.0)
requests = sorted({
    m.split(".")[2] for m in sys.modules
    if m.startswith("lark_oapi.api.") and m.endswith("_request")
})
print(json.dumps({"requests": requests, "client": "lark_oapi.client" in sys.modules}))
"""
    # the ws client's event dispatcher reads each namespace's event processors (and their
    # event models); what must not load is any other namespace's requests, nor the client
    # that carries every namespace
    assert run(code, tmp_path) == {"requests": ["auth", "im"], "client": False}


def test_the_worker_child_imports_no_http_app_nor_ingress(tmp_path: Path) -> None:
    # the child's main (bot/app/worker_main.py) serves the workers from
    # bot/app/workers_serving.py: not the HTTP app, the consumers nor the long connection; no
    # web server at all (the service domain's demo loads one only for `countersign demo`)
    code = """
import json, sys
import bot.app.worker_main
print(json.dumps({"served_by": "bot.app.workers_serving" in sys.modules, "loaded": sorted(
    m for m in sys.modules
    if m.split(".")[:2] in (["bot", "api"], ["bot", "ingress"], ["bot", "decide"])
    or m in ("bot.app.server", "bot.lark.ws", "bot.lark.webhook", "lark_oapi.ws", "aiohttp.web")
)}))
"""
    assert run(code, tmp_path) == {"served_by": True, "loaded": []}


def test_the_whole_sdk_is_there_for_whoever_reads_it(tmp_path: Path) -> None:
    code = """
import json
import bot  # installs the deferring finder
import lark_oapi as lark
from lark_oapi.api.contact.v3 import GetUserRequest
client = lark.Client.builder().app_id("cli_a").app_secret("s").build()
print(json.dumps({
    "client": type(client).__name__,
    "contact": GetUserRequest.__name__,
    "im": lark.api.im.v1.CreateMessageRequest.__name__,
    "ws": lark.ws.Client.__name__,
    "dispatcher": lark.EventDispatcherHandler.__name__,
}))
"""
    assert run(code, tmp_path) == {
        "client": "Client",
        "contact": "GetUserRequest",
        "im": "CreateMessageRequest",
        "ws": "Client",
        "dispatcher": "EventDispatcherHandler",
    }


@pytest.mark.parametrize(
    "domain",
    [
        "https://open.feishu.cn",
        "https://open.larksuite.com:8443",
        "http://127.0.0.1:9090",
        "http://localhost:1",
        "http://[::1]:9",
        "http://example.com",
        "ftp://open.feishu.cn",
        "https://user:pw@open.feishu.cn",
        "https://open.feishu.cn/path",
        "https://open.feishu.cn?q=1",
        "https://open.feishu.cn#f",
        "https://",
        "",
    ],
)
def test_the_domain_rule_is_the_sdks(domain: str) -> None:
    def verdict(check: object) -> bool:
        try:
            check(domain)  # type: ignore[operator]
        except ValueError:
            return False
        return True

    assert verdict(checked_domain) == verdict(_validate_domain)


def test_which_packages_are_deferred() -> None:
    deferred = [
        "lark_oapi",
        "lark_oapi.api",
        "lark_oapi.api.im",
        "lark_oapi.api.im.v1",
        "lark_oapi.api.im.v1.model",
    ]
    loaded_as_ever = [
        "lark_oapi.core",
        "lark_oapi.ws",
        "lark_oapi.event",
        "lark_oapi.api.im.v1.resource",
        "lark_oapi.api.im.v1.model.create_message_request",
        "lark_oapi_other",
    ]
    assert [name for name in deferred if not gathers(name)] == []
    assert [name for name in loaded_as_ever if gathers(name)] == []
