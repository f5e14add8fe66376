"""The store's front door (store/__init__.py): every exported name resolves, the lazy table
and the imports mypy reads agree, and `import store` alone stays cheap (no SQLAlchemy)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import store

INIT = Path(store.__file__)


def module_tree() -> ast.Module:
    return ast.parse(INIT.read_text(encoding="utf-8"), str(INIT))


def is_type_checking(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    )


def type_checking_names() -> dict[str, tuple[str, str]]:
    """exported name -> (module, name there), as the TYPE_CHECKING blocks import them; a
    private import re-bound to a public name (`attention_groups = _attention`) counts under
    the public name."""
    imported: dict[str, tuple[str, str]] = {}
    rebound: dict[str, str] = {}
    for block in filter(is_type_checking, module_tree().body):
        assert isinstance(block, ast.If)
        for node in block.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    imported[alias.asname or alias.name] = (node.module, alias.name)
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
                for target in node.targets:
                    assert isinstance(target, ast.Name)
                    rebound[target.id] = node.value.id
    names = {name: source for name, source in imported.items() if not name.startswith("_")}
    names.update({public: imported[private] for public, private in rebound.items()})
    return names


def table_names() -> dict[str, tuple[str, str]]:
    """exported name -> (module, name there), as the lazy table loads them."""
    return {name: (module, store._RENAMED.get(name, name)) for name, module in store._OWNER.items()}


def test_every_exported_name_resolves() -> None:
    missing = [name for name in store.__all__ if not hasattr(store, name)]
    assert missing == []


def test_the_table_and_the_type_checking_imports_name_the_same_things() -> None:
    assert table_names() == type_checking_names()


def test_all_and_dir_list_the_table() -> None:
    assert sorted(store.__all__) == sorted(store._OWNER)
    assert set(store.__all__) <= set(dir(store))
    assert set(store._RENAMED) <= set(store._OWNER)


def test_no_exported_name_is_a_module_of_the_store() -> None:
    """Importing `store.x` sets the package's attribute `x` to the module, which would shadow
    an exported `x` (hence `_RENAMED`)."""
    modules = {path.stem for path in INIT.parent.glob("*.py")} | {
        path.name for path in INIT.parent.iterdir() if (path / "__init__.py").exists()
    }
    assert sorted(set(store.__all__) & modules) == []


def test_an_unknown_name_is_an_attribute_error() -> None:
    assert not hasattr(store, "no_such_name")


def test_importing_store_alone_loads_no_sqlalchemy() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import store, sys; print(sorted(m for m in sys.modules if m.startswith("
            "('sqlalchemy', 'alembic', 'asyncpg', 'aiosqlite', 'store.'))))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=INIT.parents[1],
    )
    assert loaded.stdout.strip() == "[]"


def internal_names() -> set[str]:
    """The names of the last TYPE_CHECKING block: internals (tables, hand-written SQL, group
    commit parts) that only bench/ and tests/ may still use."""
    *_public, internals = filter(is_type_checking, module_tree().body)
    assert isinstance(internals, ast.If)
    return {
        alias.asname or alias.name
        for node in internals.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_the_product_uses_none_of_the_stores_internals() -> None:
    """bot, cards, workers and kernel reach the store through its public names only; the
    internals still exported serve the benches and the tests."""
    internals = internal_names()
    assert {"OperationRow", "claim_intent", "GroupWriter"} <= internals  # the block it reads
    root = INIT.parents[1]
    offenders = [
        f"{path.relative_to(root)}:{node.lineno} {alias.name}"
        for package in ("bot", "cards", "workers", "kernel")
        for path in sorted((root / package).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        if isinstance(node, ast.ImportFrom) and node.module == "store"
        for alias in node.names
        if alias.name in internals
    ]
    assert offenders == []
