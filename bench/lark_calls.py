"""CPU per card patch in the bot's process: the SDK's own async call against `LarkApi`.

lark-oapi's `apatch` builds a new `httpx.AsyncClient` (SSL context, CA bundle) per request;
`LarkApi` sends the same SDK-built request over one long-lived client (bot/lark/transport.py).
The sandbox runs in its own process (real Lark is remote), so the figures are the caller's CPU
alone (`time.process_time`), per patch, sequential, after a warm-up; both sides pass the same
tenant token, so neither fetches one in the measured part.

    .venv/bin/python bench/lark_calls.py [--patches N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import lark_oapi as lark  # type: ignore[import-untyped]
from aiohttp import web
from lark_oapi.api.im.v1 import (  # type: ignore[import-untyped]
    PatchMessageRequest,
    PatchMessageRequestBody,
)
from lark_oapi.core.model import RequestOption  # type: ignore[import-untyped]

from bot.lark.api import LarkApi
from larksandbox import state as sandbox_state
from larksandbox.app import SandboxOptions, build_sandbox
from larksandbox.state import DEFAULT_APP_ID, default_state

CHAT = "oc_ops"


def card(title: str) -> dict[str, Any]:
    return {
        "schema": "2.0",
        "header": {"title": {"tag": "plain_text", "content": title}},
        "body": {"elements": [{"tag": "markdown", "content": "bench"}]},
    }


def serve_sandbox(port: int, app_secret: str) -> None:
    """The child process: the sandbox, its rate limits lifted (many patches are the point)."""
    sandbox_state.CHAT_SEND_LIMIT_PER_S = 1_000_000
    sandbox_state.PATCH_LIMIT_PER_S = 1_000_000
    state = default_state()
    state.apps[DEFAULT_APP_ID].app_secret = app_secret
    web.run_app(build_sandbox(state, SandboxOptions()), host="127.0.0.1", port=port)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def wait_for(url: str) -> None:
    deadline = time.monotonic() + 30
    async with aiohttp.ClientSession() as http:
        while True:
            try:
                async with http.get(url):
                    return
            except aiohttp.ClientConnectionError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)


async def cpu_ms_per_call(calls: int, call: Callable[[int], Awaitable[None]]) -> float:
    for i in range(3):  # warm-up: imports, first connection, caches
        await call(i)
    started = time.process_time()
    for i in range(calls):
        await call(i)
    return (time.process_time() - started) * 1000 / calls


async def bench(base_url: str, app_secret: str, patches: int) -> tuple[float, float]:
    api = LarkApi(DEFAULT_APP_ID, app_secret, base_url)
    try:
        message_id = await api.send_card(CHAT, card("start"), "bench-lark-calls")
        token = await api.tokens.get()
        sdk = lark.Client.builder().enable_set_token(True).domain(base_url).build()
        option = RequestOption.builder().tenant_access_token(token).build()

        async def sdk_patch(i: int) -> None:
            body = PatchMessageRequestBody.builder().content(json.dumps(card(f"sdk {i}"))).build()
            request = PatchMessageRequest.builder().message_id(message_id).request_body(body)
            response = await sdk.im.v1.message.apatch(request.build(), option)
            assert response.success(), response.msg

        async def api_patch(i: int) -> None:
            await api.patch_card(message_id, card(f"api {i}"))

        sdk_ms = await cpu_ms_per_call(patches, sdk_patch)
        api_ms = await cpu_ms_per_call(patches, api_patch)
    finally:
        await api.close()
    return sdk_ms, api_ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patches", type=int, default=100)
    parser.add_argument("--serve-sandbox", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    app_secret = os.environ.setdefault("BENCH_SANDBOX_SECRET", secrets.token_hex(8))
    if args.serve_sandbox:
        serve_sandbox(args.serve_sandbox, app_secret)
        return 0
    port = free_port()
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve-sandbox", str(port)],
        stdout=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        asyncio.run(wait_for(f"{base_url}/sandbox/"))
        sdk_ms, api_ms = asyncio.run(bench(base_url, app_secret, args.patches))
    finally:
        child.terminate()
        child.wait()
    print(f"card patch, CPU of the calling process, {args.patches} sequential patches each")
    print(f"{'path':<40} {'CPU ms/patch':>12}")
    print(f"{'lark-oapi apatch (a client per request)':<40} {sdk_ms:>12.2f}")
    print(f"{'LarkApi.patch_card (one shared client)':<40} {api_ms:>12.2f}")
    print(f"{'ratio SDK / LarkApi':<40} {sdk_ms / api_ms:>12.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
