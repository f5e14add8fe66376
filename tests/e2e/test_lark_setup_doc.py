"""docs/lark-setup.md's minimal config, as written, against the sandbox: its commands and its
next step (propose, an operator confirms, the card shows the fill) work end to end.

Only what a reader must replace is replaced: the app's credentials, tenant, chat and operator
ids (the sandbox's), the base URL, and a free port instead of 8080.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import shlex
import signal
import sys
import textwrap
import tomllib
from pathlib import Path

import aiohttp

from bot.api.signin import CALLBACK_PATH
from bot.config.settings import WebSettings
from tests.support.processes import ENV, ROOT, cli, free_port, start_sandbox

GUIDE = ROOT / "docs" / "lark-setup.md"


def blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, re.DOTALL)


def config_section() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index("## 5. The config")
    return text[start : text.index("\n## ", start + 1)]


def commands(block: str) -> list[list[str]]:
    return [shlex.split(line.split("#", 1)[0]) for line in block.splitlines() if line.strip()]


async def test_the_guides_minimal_config_runs_and_its_next_step_confirms(tmp_path: Path) -> None:
    section = config_section()
    [toml], [setup, next_step] = blocks(section, "toml"), blocks(section, "sh")
    sandbox_port, port = free_port(), free_port()
    sandbox, _banner = await start_sandbox(sandbox_port, tmp_path / "sandbox.json")
    base = f"http://127.0.0.1:{sandbox_port}"
    bot = None
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/sandbox/api/apps") as response:
                app = (await response.json())["items"][0]
            replaced = (
                re.sub(r'app_id = "[^"]*"', f'app_id = "{app["app_id"]}"', toml)
                .replace('["2df73991750abcde"]', f'["{app["tenant_key"]}"]')
                .replace('"https://open.larksuite.com"', f'"{base}"')
                .replace("oc_0123456789abcdef", "oc_ops")
                .replace('["ou_aaaaaaaaaaaa", "ou_bbbbbbbbbbbb"]', '["ou_alice", "ou_bob"]')
            )
            for placeholder in ("cli_a1b2c3d4e5f6", "2df73991750abcde", "oc_0123", "ou_aaaa"):
                assert placeholder not in replaced, placeholder
            (tmp_path / "countersign.toml").write_text(f"{replaced}\n[http]\nport = {port}\n")

            env = dict(ENV)
            for command in commands(setup):
                if command[0] == "export":
                    name = command[1].split("=", 1)[0]
                    secret = {"COUNTERSIGN_LARK_APP_SECRET": app["app_secret"]}.get(name)
                    env[name] = secret or secrets.token_hex(32)
            assert {"COUNTERSIGN_LARK_APP_SECRET", "COUNTERSIGN_TOKEN"} <= env.keys()
            [check] = [c for c in commands(setup) if c[:3] == ["countersign", "config", "check"]]
            checked = await cli(*check[1:], env=env, cwd=tmp_path)
            assert checked.code == 0, checked.err
            [run] = [c for c in commands(setup) if c[:2] == ["countersign", "run"]]
            bot = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "bot.cli", *run[1:]),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                cwd=tmp_path,
                env=env,
            )
            assert bot.stdout is not None
            async with asyncio.timeout(60):
                while not (line := (await bot.stdout.readline()).decode()).startswith(
                    "countersign API listening on "
                ):
                    assert line, "the bot exited before it listened"

            [propose] = commands(next_step)
            args = [str(ROOT / a) if a.startswith("examples/") else a for a in propose[1:]]
            proposed = await cli(*args, "--json", env=env, cwd=tmp_path)
            assert proposed.code == 0, proposed.err
            operation_id = json.loads(proposed.out)["id"]
            message_id = await card_of(http, base, "oc_ops")
            async with http.post(
                f"{base}/sandbox/api/messages/{message_id}/click",
                json={"operator": "ou_alice", "button": "confirm"},
            ) as response:
                assert response.status == 200, await response.text()
            async with asyncio.timeout(60):
                while True:
                    shown = await cli("show", operation_id, "--json", env=env, cwd=tmp_path)
                    view = json.loads(shown.out)
                    if (view.get("outcome") or {}).get("status") == "filled":
                        break
                    await asyncio.sleep(0.2)
            async with asyncio.timeout(60):  # the card follows the outcome by patch
                while True:
                    if "Filled" in json.dumps(await message_of(http, base, message_id)):
                        break
                    await asyncio.sleep(0.1)
    finally:
        for process in (bot, sandbox):
            if process is not None and process.returncode is None:
                process.send_signal(signal.SIGTERM)
                await asyncio.wait_for(process.wait(), 30)


async def card_of(http: aiohttp.ClientSession, base: str, chat_id: str) -> str:
    async with asyncio.timeout(30):
        while True:
            async with http.get(f"{base}/sandbox/api/chats/{chat_id}/messages") as response:
                items = (await response.json())["items"]
            cards = [m for m in items if m.get("msg_type") == "interactive"]
            if cards:
                return str(cards[-1]["message_id"])
            await asyncio.sleep(0.1)


async def message_of(http: aiohttp.ClientSession, base: str, message_id: str) -> object:
    async with http.get(f"{base}/sandbox/api/messages/{message_id}") as response:
        return await response.json()


def test_the_sign_in_sections_web_tables_are_valid_settings() -> None:
    """Section 7's [web] examples, as written (indented list blocks too), pass the settings
    model: a reader who copies them gets no error."""
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index("## 7. Sign in with Lark")
    found = re.findall(r"```toml\n(.*?)```", text[start:], re.DOTALL)
    assert len(found) >= 2
    for block in found:
        table = tomllib.loads(textwrap.dedent(block))["web"]
        web = WebSettings.model_validate({"public_url": "https://countersign.example.com", **table})
        assert web.sign_in or "session_idle_s" in table


def test_the_sign_in_section_names_the_redirect_url_the_bot_uses_and_the_scopes() -> None:
    """What a real app needs for sign-in: the redirect URL the bot sends (its public URL plus
    the callback path it serves), where Lark takes it, and the scopes (none beyond the bot's)."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text[text.index("## 7. Sign in with Lark") :]
    end = section.find("\n## ", 1)
    section = section if end < 0 else section[:end]
    web = WebSettings.model_validate({"public_url": "https://YOUR-HOST", "sign_in": True})
    assert web.redirect_uri.endswith(CALLBACK_PATH)
    assert f"`{web.redirect_uri}`" in section
    assert "Security Settings → Redirect URLs" in section
    assert "Permissions & Scopes" in section and "/open-apis/authen/v1/user_info" in section
