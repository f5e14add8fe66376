"""The layout holds: the core packages never import the local Lark, and it never imports them.

`larksandbox` stands in for Lark, which knows nothing of countersign; the bot meets it in one
module only (`bot/devstack.py`, the dev and demo wiring), so no production path can reach
the sandbox by accident. Imports are read from the source (`ast`), including those inside
functions, so a lazy import counts too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ("bot", "cards", "store", "workers")
SANDBOX = "larksandbox"
DEV_WIRING = ROOT / "bot" / "devstack.py"


def imported(path: Path) -> Iterator[tuple[int, str]]:
    """(line, top-level package) of every import in the module, wherever it stands."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.split(".")[0]


def modules(*packages: str) -> list[Path]:
    found = [path for package in packages for path in sorted((ROOT / package).rglob("*.py"))]
    assert found, f"no modules under {packages}"
    return found


def test_only_the_dev_wiring_imports_the_sandbox() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in modules(*CORE)
        if path != DEV_WIRING
        for line, package in imported(path)
        if package == SANDBOX
    ]
    assert offenders == [], "import larksandbox only in bot/devstack.py"
    assert any(package == SANDBOX for _line, package in imported(DEV_WIRING))


def test_the_sandbox_imports_nothing_of_the_bot() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line} imports {package}"
        for path in modules(SANDBOX)
        for line, package in imported(path)
        if package in CORE
    ]
    assert offenders == []
