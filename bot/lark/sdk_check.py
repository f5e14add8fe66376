"""A start-up check that lark-oapi still has the private parts countersign builds on.

The ws transport subclasses `lark_oapi.ws.client.Client` and overrides or reads private
members (bot/lark/ws.py), and the HTTP transport sends the SDK's own requests with two of
its private helpers (bot/lark/transport.py). pyproject.toml pins the tested range; if an
install drifts outside it and those parts moved, the bot refuses to start with one line
naming what is missing, instead of failing on the first click.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

TESTED_RANGE = ">=1.7.5,<1.8"

# (module, attribute) the HTTP transport imports (every Lark mode sends through it)
HTTP_PARTS = (
    ("lark_oapi.core.http.transport", "_build_header"),
    ("lark_oapi.core.http.transport", "_build_url"),
)
# ... and the ws transport imports or replaces
MODULE_PARTS = (
    *HTTP_PARTS,
    ("lark_oapi.ws.client", "loop"),  # the module-global loop the SDK schedules on
    ("lark_oapi.ws.client", "Client"),
)
# methods of ws.Client the subclass overrides or calls
CLIENT_METHODS = (
    "start",
    "_connect",
    "_disconnect",
    "_handle_message",
    "_handle_data_frame",
    "_write_message",
    "_combine",
)
# what a ws.Client instance must carry (set in its __init__)
CLIENT_FIELDS = ("_conn", "_cache", "_ping_interval", "_auto_reconnect", "on_reconnected")


class SdkMismatch(RuntimeError):
    """The installed lark-oapi lacks a private part the transports depend on."""


def _module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _missing_parts(parts: tuple[tuple[str, str], ...]) -> list[str]:
    return [
        f"{module}.{name}"
        for module, name in parts
        if (found := _module(module)) is None or not hasattr(found, name)
    ]


def sdk_mismatch(client_class: Any | None = None, log_level: Any = None) -> list[str]:
    """What is missing, as `module.name` / `Client.name` / `Client().name` (empty: all there).
    `client_class`: the ws client class to inspect (default: the installed SDK's)."""
    missing = _missing_parts(MODULE_PARTS)
    if client_class is None:
        ws = _module("lark_oapi.ws.client")
        client_class = getattr(ws, "Client", None)
        if client_class is None:
            return missing
    missing += [
        f"Client.{name}"
        for name in CLIENT_METHODS
        if not callable(getattr(client_class, name, None))
    ]
    if log_level is None:
        from lark_oapi.core.enum import LogLevel  # type: ignore[import-untyped]

        log_level = LogLevel.WARNING
    # Building one opens nothing: the SDK connects in start(). (It does set the SDK's logger
    # level, so pass the level the transport will use anyway.)
    probe = client_class("cli_sdk_check", "-", log_level=log_level)
    missing += [f"Client().{name}" for name in CLIENT_FIELDS if not hasattr(probe, name)]
    return missing


def check_sdk(log_level: Any = None, client_class: Any | None = None) -> None:
    """Raise `SdkMismatch` with one line if the installed lark-oapi moved what we rely on."""
    _refuse(sdk_mismatch(client_class, log_level))


def check_http_parts() -> None:
    """`check_sdk` for the HTTP transport alone (webhook mode, sign-in: no ws client)."""
    _refuse(_missing_parts(HTTP_PARTS))


def _refuse(missing: list[str]) -> None:
    if missing:
        from importlib.metadata import PackageNotFoundError, version  # on a refusal only

        try:
            installed = version("lark-oapi")
        except PackageNotFoundError:
            installed = "?"
        raise SdkMismatch(
            f"lark-oapi {installed} lacks what countersign's Lark transports use "
            f"({', '.join(missing)}); install lark-oapi{TESTED_RANGE}, the tested range"
        )
