"""The start-up check names the lark-oapi private parts that moved, and passes on the pinned SDK."""

from __future__ import annotations

from typing import Any

import lark_oapi as lark  # type: ignore[import-untyped]
import lark_oapi.ws.client as lark_ws_client  # type: ignore[import-untyped]
import pytest

from bot.lark.sdk_check import TESTED_RANGE, SdkMismatch, check_sdk, sdk_mismatch


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
