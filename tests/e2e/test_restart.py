"""Crash-only recovery with a real process: SIGKILL while a reply is in flight, restart, once.

The bot runs as `countersign run --config FILE` (webhook mode) against an in-process sandbox.
Its helpers (a TOML written from the e2e harness's own settings, a bot subprocess whose output
is drained and shown on failure) are tests/support/bot_processes.py, shared with the other
process tests.
"""

from __future__ import annotations

import signal
from pathlib import Path

from bot.app.devstack import point_webhooks
from bot.ingress.text import INBOX_KIND
from store import ANSWERED, RECEIVED, Inbox, Store
from tests.support.backends import Backend
from tests.support.bot_processes import bot_env, bot_processes, sandbox_alone, write_config
from tests.support.processes import free_port
from tests.support.waiting import eventually

# -- the test -----------------------------------------------------------------------------------


async def test_a_text_stored_but_not_answered_is_answered_once_after_a_kill(
    backend: Backend, store: Store, tmp_path: Path
) -> None:
    inbox = Inbox(store)
    async with sandbox_alone() as lark, bot_processes() as start:
        config = write_config(tmp_path / "bot.toml", backend, lark.app, free_port(), "webhook")
        env = bot_env(lark.app)
        first = await start(config, env)
        await point_webhooks(lark.app, first.url)

        # Lark's OpenAPI now answers after 30 s: the reply will be in flight when we kill.
        # The (generous) app rate limit makes the sandbox note each authorized call as it
        # arrives, before the latency: proof that the reply request has reached "Lark".
        status, _ = await lark.control(
            "POST", "/faults", {"latency_ms": 30_000, "app_rate_limit_per_s": 1000}
        )
        assert status == 200
        message_id = await lark.say("help")

        async def reply_in_flight() -> bool:
            entry = await inbox.get(INBOX_KIND, message_id)
            calls = lark.state.app_call_times.get(lark.app.app_id, ())
            return entry is not None and entry.tries == 1 and len(calls) == 1

        await eventually(reply_in_flight)
        assert await first.kill() == -signal.SIGKILL
        stored = await inbox.get(INBOX_KIND, message_id)
        assert stored is not None and stored.status == RECEIVED and stored.answer is None
        assert lark.replies_to(message_id) == []

        status, _ = await lark.control(
            "POST", "/faults", {"latency_ms": 0, "app_rate_limit_per_s": 0}
        )
        assert status == 200
        second = await start(config, env)  # same port: the sandbox's webhook URLs still hold

        await eventually(
            lambda: bool(lark.replies_to(message_id)), deadline_s=20, woken_by=lark.state
        )

        async def answered() -> bool:
            entry = await inbox.get(INBOX_KIND, message_id)
            return entry is not None and entry.status == ANSWERED

        await eventually(answered)
        [reply] = lark.replies_to(message_id)
        assert "help" in reply and "never by text" in reply
        assert await second.terminate() == 0

        # A third run finds nothing to recover: still one reply once it has answered new text.
        third = await start(config, env)
        status, ready = await third.readyz()
        assert status == 200, ready
        marker = await lark.say("help", sender="ou_bob")
        await eventually(lambda: bool(lark.replies_to(marker)), deadline_s=20, woken_by=lark.state)
        assert len(lark.replies_to(message_id)) == 1
        final = await inbox.get(INBOX_KIND, message_id)
        assert final is not None and final.status == ANSWERED and final.tries == 2
        assert await third.terminate() == 0
