"""`countersign mcp --http` off loopback (issue 30): it needs a bearer token or refuses to
start with one line naming the fix, and keeps the Host and Origin checks (DNS rebinding) for
the names clients use. The real process, reached over real HTTP."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bot.agents.mcp.http_guard import HOSTS_ENV, TOKEN_ENV, GuardError, guard_for
from bot.agents.mcp.serving import LISTENING
from tests.support.mcp_client import INITIALIZE
from tests.support.processes import ENV, ROOT
from tests.support.waiting import scaled

TOKEN = "a-random-mcp-http-token-0123456789abcdef"
NAME = "mcp.test"  # the name clients use for this server


async def mcp_http(
    host: str, extra_env: dict[str, str]
) -> tuple[asyncio.subprocess.Process, list[str]]:
    """`countersign mcp --http --host HOST --port 0`, read until it listens or exits."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "bot.cli", "mcp", "--http", "--host", host, "--port", "0"),
        *("--url", "http://127.0.0.1:9"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=ROOT,
        env={**ENV, "COUNTERSIGN_TOKEN": "proposer-token-123456", **extra_env},
    )
    assert process.stdout is not None
    seen: list[str] = []
    async with asyncio.timeout(scaled(40)):
        while line := (await process.stdout.readline()).decode():
            seen.append(line)
            if line.startswith(LISTENING):
                break
    return process, seen


@asynccontextmanager
async def listening(host: str, extra_env: dict[str, str]) -> AsyncIterator[int]:
    """Its port while it runs; stopped (exit 0) after."""
    process, seen = await mcp_http(host, extra_env)
    assert seen and seen[-1].startswith(LISTENING), "".join(seen)
    try:
        yield int(seen[-1][len(LISTENING) :].split()[0].rsplit(":", 1)[1].split("/")[0])
    finally:
        process.terminate()
        assert await asyncio.wait_for(process.wait(), scaled(20)) == 0


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
async def test_off_loopback_without_a_token_it_refuses_to_start_and_names_the_fix(
    host: str,
) -> None:
    process, seen = await mcp_http(host, {})
    code = await asyncio.wait_for(process.wait(), scaled(20))
    assert code == 2 and not any(line.startswith(LISTENING) for line in seen), seen
    [line] = [line for line in seen if line.startswith("countersign mcp:")]
    assert TOKEN_ENV in line and "--host 127.0.0.1" in line


async def test_off_loopback_only_the_token_and_the_named_host_get_in() -> None:
    env = {TOKEN_ENV: TOKEN, HOSTS_ENV: NAME}
    async with listening("0.0.0.0", env) as port, httpx2.AsyncClient() as http:
        url = f"http://127.0.0.1:{port}/mcp"
        ours = {"Host": f"{NAME}:{port}", "Accept": "application/json, text/event-stream"}
        bearer = {"Authorization": f"Bearer {TOKEN}"}

        async def status(**headers: str) -> int:
            response = await http.post(url, json=INITIALIZE, headers={**ours, **headers})
            assert TOKEN not in response.text
            return response.status_code

        assert await status() == 401  # no token
        assert await status(Authorization=f"Bearer {TOKEN[:-1]}x") == 401
        assert await status(Authorization=TOKEN) == 401  # not as a bearer token
        # DNS rebinding: a page at evil.example resolves its name to this server
        assert await status(**bearer, Host=f"evil.example:{port}") == 421
        assert await status(**bearer, Origin="http://evil.example") == 403
        assert await status(**bearer, Origin=f"http://{NAME}:{port}") == 200

        # an MCP client with the token, under the server's name, works as on loopback
        client = httpx2.AsyncClient(headers={**bearer, "Host": f"{NAME}:{port}"})
        async with client, Client(streamable_http_client(url, http_client=client)) as agent:
            tools = {tool.name for tool in (await agent.list_tools()).tools}
            assert "propose_operation" in tools


async def test_on_loopback_a_token_if_set_is_required_and_rebinding_is_refused() -> None:
    async with listening("127.0.0.1", {TOKEN_ENV: TOKEN}) as port, httpx2.AsyncClient() as http:
        url = f"http://127.0.0.1:{port}/mcp"
        accept = {"Accept": "application/json, text/event-stream"}
        bearer = {"Authorization": f"Bearer {TOKEN}", **accept}
        assert (await http.post(url, json=INITIALIZE, headers=accept)).status_code == 401
        rebound = {**bearer, "Host": f"evil.example:{port}"}
        assert (await http.post(url, json=INITIALIZE, headers=rebound)).status_code == 421
        assert (await http.post(url, json=INITIALIZE, headers=bearer)).status_code == 200


def test_the_checks_name_the_configured_host_and_refuse_what_cannot_be_checked() -> None:
    security = guard_for("10.1.2.3", {TOKEN_ENV: TOKEN}).security
    assert security.enable_dns_rebinding_protection
    assert security.allowed_hosts == ["10.1.2.3", "10.1.2.3:*"]
    assert "https://10.1.2.3:*" in security.allowed_origins
    v6 = guard_for("fd00::1", {TOKEN_ENV: TOKEN, HOSTS_ENV: "mcp.internal"}).security
    assert v6.allowed_hosts == ["[fd00::1]", "[fd00::1]:*", "mcp.internal", "mcp.internal:*"]
    loopback = guard_for("127.0.0.1", {})
    assert loopback.token is None and "localhost:*" in loopback.security.allowed_hosts

    refusals = {
        "short token": ("10.1.2.3", {TOKEN_ENV: "short"}, TOKEN_ENV),
        "wildcard, no names": ("0.0.0.0", {TOKEN_ENV: TOKEN}, HOSTS_ENV),
        "a URL for a name": ("0.0.0.0", {TOKEN_ENV: TOKEN, HOSTS_ENV: "http://x/"}, HOSTS_ENV),
        "a name with a port": ("0.0.0.0", {TOKEN_ENV: TOKEN, HOSTS_ENV: "mcp.x:8765"}, HOSTS_ENV),
        "no token": ("mcp.internal", {}, TOKEN_ENV),
    }
    for why, (host, env, named) in refusals.items():
        with pytest.raises(GuardError) as refused:
            guard_for(host, env)
        assert named in str(refused.value) and "\n" not in str(refused.value), why


def test_the_refusal_never_shows_the_token() -> None:
    with pytest.raises(GuardError) as refused:
        guard_for("10.1.2.3", {TOKEN_ENV: "too-short-secret"})
    assert "too-short-secret" not in str(refused.value)
