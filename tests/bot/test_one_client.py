"""One HTTP client for the proposers' API (issue 16): the CLI, the demo and the MCP server all
call it through bot/client.py; no other product module builds an /api/v1 request."""

from __future__ import annotations

from tests.support.processes import ROOT

PACKAGES = ("bot", "cards", "store", "workers", "larksandbox")
SERVER = ROOT / "bot" / "api"  # the routes themselves
CLIENT = ROOT / "bot" / "client.py"


def test_only_the_client_speaks_to_the_proposers_api() -> None:
    speakers = sorted(
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "/api/v1/" in path.read_text(encoding="utf-8")
        and path != CLIENT
        and SERVER not in path.parents
    )
    assert speakers == []
    assert "/api/v1/operations" in CLIENT.read_text(encoding="utf-8")
