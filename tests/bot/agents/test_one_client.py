"""One HTTP client for the proposers' API (issue 16): the CLI, the demo and the MCP server all
call it through bot/agents/client.py; no other product module builds an /api/v1 request."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.processes import ROOT

PACKAGES = ("bot", "cards", "store", "workers", "larksandbox")
SERVER = ROOT / "bot" / "api"  # the routes themselves
CLIENT = ROOT / "bot" / "agents" / "client.py"


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


HTTP_LIBRARIES = ("aiohttp", "httpx", "requests", "urllib.request", "http.client")


def test_the_cli_builds_no_http_client_of_its_own() -> None:
    """The CLI reaches the API only through bot/agents/client.py: none of its modules imports an
    HTTP library (read from the import statements, not from text that mentions one)."""
    imports = sorted(
        (str(path.relative_to(ROOT)), name)
        for path in (ROOT / "bot" / "cli").rglob("*.py")
        for name in imported_modules(path)
        if any(name == lib or name.startswith(lib + ".") for lib in HTTP_LIBRARIES)
    )
    assert imports == []
    assert "bot.agents.client" in {
        name for path in (ROOT / "bot" / "cli").rglob("*.py") for name in imported_modules(path)
    }


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module)
    return names
