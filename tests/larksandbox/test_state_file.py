"""The default app id has Lark's format, and state files saved under the old one still load."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bot.app.devstack import SandboxStateUnreadable, sandbox_state
from larksandbox.entities import Message, Revision
from larksandbox.state import (
    DEFAULT_APP_ID,
    LEGACY_DEFAULT_APP_ID,
    SandboxState,
    default_state,
)


def test_the_default_app_id_has_larks_format() -> None:
    assert re.fullmatch(r"cli_[0-9a-f]{16}", DEFAULT_APP_ID)
    assert list(default_state().apps) == [DEFAULT_APP_ID]


def saved_with_the_old_id(path: Path) -> SandboxState:
    """A state file as the sandbox wrote it while its default app was `cli_sandbox`."""
    state = default_state()
    state.messages["om_1"] = Message(
        "om_1", "oc_ops", "text", '{"text": "hi"}', "app", DEFAULT_APP_ID, "2026-01-01T00:00:00"
    )
    state.messages["om_1"].history.append(
        Revision("2026-01-01T00:00:00", '{"text": "hi"}', "create", DEFAULT_APP_ID)
    )
    path.write_text(json.dumps(state.snapshot()).replace(DEFAULT_APP_ID, LEGACY_DEFAULT_APP_ID))
    assert DEFAULT_APP_ID not in path.read_text()
    return state


def test_a_state_file_with_the_old_default_app_id_loads_under_the_new_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sandbox.json"
    before = saved_with_the_old_id(path)
    loaded = SandboxState.load(path)
    assert list(loaded.apps) == [DEFAULT_APP_ID]
    app = loaded.apps[DEFAULT_APP_ID]
    assert app.app_secret == before.apps[DEFAULT_APP_ID].app_secret  # the same credentials
    assert app.bot_open_id == f"ou_bot_{DEFAULT_APP_ID}"
    assert all(chat.apps == [DEFAULT_APP_ID] for chat in loaded.chats.values())
    message = loaded.messages["om_1"]
    assert message.sender_id == DEFAULT_APP_ID and message.history[0].actor == DEFAULT_APP_ID
    # and `countersign sandbox --state FILE` starts from it
    assert list(sandbox_state(path).apps) == [DEFAULT_APP_ID]


def test_a_state_file_with_both_ids_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "sandbox.json"
    data = default_state().snapshot()
    old = dict(data["apps"][0], app_id=LEGACY_DEFAULT_APP_ID)
    data["apps"].append(old)
    path.write_text(json.dumps(data))
    with pytest.raises(SandboxStateUnreadable) as refused:
        sandbox_state(path)
    message = str(refused.value)
    assert LEGACY_DEFAULT_APP_ID in message and DEFAULT_APP_ID in message
    assert str(path) in message and "remove one of them" in message
