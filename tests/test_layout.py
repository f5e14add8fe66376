"""The layout holds: the core packages never import the local Lark or the local venues, and
they never import the core.

`larksandbox` stands in for Lark and `hlsandbox` for Hyperliquid, which know nothing of
countersign; the bot meets each in its dev wiring only (`bot/app/devstack.py` for the demo and
`run --dev`, `bot/cli/hl_sandbox_command.py` for `countersign hl-sandbox`), so no production
path can reach a sandbox by accident. Imports are read from the source (`ast`), including those inside
functions, so a lazy import counts too.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

from store import CardDelivery, DeliveryState, Execution, InboxStatus, Stage, State, Tone

ROOT = Path(__file__).resolve().parents[1]
CORE = ("bot", "cards", "kernel", "store", "workers")
SANDBOX = "larksandbox"
VENUE_EMULATOR = "hlsandbox"
DEV_WIRING = ROOT / "bot" / "app" / "devstack.py"
EMULATOR_WIRING = (DEV_WIRING, ROOT / "bot" / "cli" / "hl_sandbox_command.py")


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
    assert offenders == [], "import larksandbox only in bot/app/devstack.py"
    assert any(package == SANDBOX for _line, package in imported(DEV_WIRING))


def test_only_the_dev_wiring_imports_the_venue_emulator() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in modules(*CORE)
        if path not in EMULATOR_WIRING
        for line, package in imported(path)
        if package == VENUE_EMULATOR
    ]
    assert offenders == [], "import hlsandbox only in the dev wiring"


def test_the_sandboxes_import_nothing_of_the_bot() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line} imports {package}"
        for path in modules(SANDBOX, VENUE_EMULATOR)
        for line, package in imported(path)
        if package in CORE
    ]
    assert offenders == []


MODULE_LINE_LIMIT = 400
# A longer module says why in one sentence near its top, on a line starting with this.
LONG_MODULE_REASON = "# Over 400 lines:"


def reason_for_length(lines: list[str]) -> str | None:
    for line in lines[:40]:
        if line.startswith(LONG_MODULE_REASON):
            return line.removeprefix(LONG_MODULE_REASON).strip() or None
    return None


def test_every_module_is_at_most_400_lines_or_says_why() -> None:
    too_long = []
    for path in modules(*CORE, SANDBOX, VENUE_EMULATOR):
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) > MODULE_LINE_LIMIT and reason_for_length(lines) is None:
            too_long.append(f"{path.relative_to(ROOT)}: {len(lines)} lines")
    assert too_long == [], f"split these, or say why at the top ({LONG_MODULE_REASON} ...)"


def test_the_kernel_imports_nothing_of_ours() -> None:
    """`kernel` is the bottom: every package may import it, it imports none of them."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line} imports {package}"
        for path in modules("kernel")
        for line, package in imported(path)
        if package in {*CORE, SANDBOX, VENUE_EMULATOR} - {"kernel"}
    ]
    assert offenders == []


# The store's own white-box tests may reach inside it; nothing else outside store/ does.
FRONT_DOOR_OUTSIDERS = ("bot", "cards", "workers", "kernel", "bench", "tests")
STORE_OWN_TESTS = ROOT / "tests" / "store"


def test_only_the_front_door_is_imported_from_outside_store() -> None:
    """Outside store/, `from store import ...` only (store/__init__.py lists the names), never
    a module inside it (`from store.x import`, `import store.x`), so the store can regroup its
    modules freely."""
    offenders = []
    for path in modules(*FRONT_DOOR_OUTSIDERS):
        if STORE_OWN_TESTS in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "store":
                # `from store import x` of a module x is a module inside too
                names = [
                    f"store.{alias.name}" for alias in node.names if is_store_module(alias.name)
                ]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            if any(name.startswith("store.") for name in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == [], "import these from `store` itself (add the name to its front door)"


def is_store_module(name: str) -> bool:
    return (ROOT / "store" / f"{name}.py").exists() or (ROOT / "store" / name).is_dir()


def test_no_test_module_imports_another_test_module() -> None:
    """Shared helpers live in tests/support/ (and fixtures in conftest.py files); imports are
    absolute, so a relative one cannot slip past."""
    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} (relative)")
                continue
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            if any(name.split(".")[0] == "tests" and is_test_module(name) for name in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def is_test_module(dotted: str) -> bool:
    """tests.x.test_y or tests.x.conftest (helpers belong in tests/support)."""
    return any(part.startswith("test_") or part == "conftest" for part in dotted.split(".")[1:])


def test_tests_outside_the_sandbox_use_its_public_surface() -> None:
    """The sandbox's own tests may reach inside it; every other test imports `larksandbox`
    itself (larksandbox/__init__.py lists the surface), so its insides can move freely."""
    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if (ROOT / "tests" / "larksandbox") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            if any(name.startswith("larksandbox.") for name in names):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def module_name(path: Path) -> str:
    """`bot/api/app.py` -> "bot.api", a package's `__init__.py` -> the package's name."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, known: Collection[str]) -> Iterator[str]:
    """The modules of `known` that `path` imports, wherever the import stands (inside a
    function, under TYPE_CHECKING). A name imported from a package is its submodule if it is
    one, else the package's `__init__`; an import of a module below `known` is its nearest
    known parent."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parents = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parents, base] if base else parents)
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


def import_cycles(packages: Sequence[str]) -> list[list[str]]:
    """The cycles among the modules of `packages`: each a set of modules that all reach one
    another through imports (sorted, with the imports that close it)."""
    paths = {module_name(path): path for path in modules(*packages)}
    graph = {name: set(imported_modules(path, paths)) for name, path in paths.items()}

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for target in graph[todo.pop()] - seen:
                seen.add(target)
                todo.append(target)
        return seen

    reaches = {name: reach(name) for name in graph}
    cycles = []
    for name in sorted(graph):
        members = sorted({name} | {other for other in reaches[name] if name in reaches[other]})
        if len(members) > 1 and members[0] == name:
            cycles.append(
                [
                    f"{source} -> {target}"
                    for source in members
                    for target in sorted(graph[source] & set(members))
                ]
            )
    return cycles


def test_no_import_cycles() -> None:
    """Imports among the core's modules run one way: no module reaches itself through its
    imports (lazy ones and TYPE_CHECKING ones included: a cycle dodged at import time is a
    cycle still), so each module can be read, and moved, after the ones it imports."""
    cycles = import_cycles(CORE)
    assert not cycles, "break these import cycles:\n" + "\n\n".join(
        "\n".join(cycle) for cycle in cycles
    )


# A lifecycle state (store.State, store.Execution) and the projection's other words (an
# outcome's Stage and Tone, the card's CardDelivery) are spelled in the vocabulary and the
# en/zh catalogue only, and migrations freeze the values they wrote; everywhere else it is
# the enum. "pending" and "failed" are also the words of the deliveries' and the inbox's
# states (store.DeliveryState, store.InboxStatus), spelled in many places this scan does not
# cover yet, so they are left out of it.
SPELLED_ELSEWHERE = {member.value for member in (*DeliveryState, *InboxStatus)}
LIFECYCLE_SPELLED_IN = ("store/vocabulary.py", "cards/strings.py")
MIGRATIONS = "store/schema/migrations/"
# A word that only looks like a state is another vocabulary's: named once, where it is
# defined, and allowed there alone, by (module, the module-level name that defines it).
OWN_VOCABULARIES = {
    # refusal reason codes: a click refused because the operation expired, was cancelled...
    ("kernel/reasons.py", "Reason"),
    # the outcome statuses of an operation that closed without running
    ("store/deliveries/conclusions.py", "EXPIRED"),
    ("store/deliveries/conclusions.py", "CHANGES_REQUESTED"),
    # what one confirmation came to inside its write (the last one needed claims)
    ("store/claims/quorum_sql.py", "Confirmed"),
    # the dashboard's en/zh labels: the words people read for the records' states
    ("bot/api/dashboard_words.py", "LABELS"),
    # a web post's answer: what the post did, stored with its inbox entry
    ("bot/api/web_decide.py", "WebResult"),
    # a protective order's venue statuses as cards read them (cards cannot import workers)
    ("cards/vocabulary.py", "PROTECTIVE_ENDED"),
    # a venue order's statuses
    ("workers/domains/finance/venues/model.py", "OrderStatus"),
    ("workers/domains/finance/venues/model.py", "TERMINAL"),
    ("workers/domains/finance/venues/model.py", "ORDER_REJECTED"),
    ("workers/domains/finance/venues/model.py", "ORDER_CANCELLED"),
    # Hyperliquid's own word for an order it refused
    ("workers/domains/finance/hyperliquid/answers.py", "HL_REJECTED"),
    # each domain's outcome statuses, with their words
    ("workers/domains/finance/words.py", "OUTCOMES"),
    ("workers/domains/message/words.py", "REJECTED"),
    ("workers/domains/service/words.py", "COMPLETED"),
    # the service receiver's status answer (stdlib only: services copy the module)
    ("workers/domains/service/receiver.py", "COMPLETED"),
    # a contract's statuses in a message destination's baseline file
    ("workers/domains/message/baseline.py", "CONTRACT_STATUSES"),
    # the address classes the outbound-call guard refuses (IANA's "reserved" range)
    ("workers/targets.py", "INSIDE"),
}


def strings_in(tree: ast.Module) -> Iterator[tuple[ast.Constant, str | None]]:
    """Every string constant but docstrings, with the module-level name it defines, if any."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for statement in tree.body:
        defines = None
        if isinstance(statement, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            defines = statement.name
        elif isinstance(statement, ast.Assign | ast.AnnAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name):
                defines = targets[0].id
        for node in ast.walk(statement):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if id(node) not in docstrings:
                    yield node, defines


def test_no_module_spells_a_lifecycle_state() -> None:
    lifecycle = {
        member.value for member in (*State, *Execution, *Stage, *Tone, *CardDelivery)
    } - SPELLED_ELSEWHERE
    offenders, used = [], set()
    for path in modules(*CORE):
        name = path.relative_to(ROOT).as_posix()
        if name in LIFECYCLE_SPELLED_IN or name.startswith(MIGRATIONS):
            continue
        for node, defines in strings_in(ast.parse(path.read_text(encoding="utf-8"), name)):
            if node.value not in lifecycle:
                continue
            if (name, defines) in OWN_VOCABULARIES:
                used.add((name, defines))
            else:
                offenders.append(f"{name}:{node.lineno}: {node.value!r}")
    assert not offenders, (
        "spell these as store.State / Execution / Stage / Tone / CardDelivery, or name a word"
        " of another vocabulary"
        " once where that vocabulary is defined (OWN_VOCABULARIES):\n" + "\n".join(offenders)
    )
    assert used == OWN_VOCABULARIES, f"these allow nothing now: {OWN_VOCABULARIES - used}"


# Readers of the projection (store.OperationView) read its attributes; indexing one by a
# string key (`view["state"]`, `view.get("outcome")`) is how the untyped dict was read.
PROJECTION_READERS = ("bot", "cards", "workers", "bench")


def indexes_a_projection(node: ast.AST) -> bool:
    """`view["..."]`, `view.get("...")` on a name that holds a projection (`view`,
    `open_view`, ...; a domain's `projection` is its terms, a dict of its own)."""

    def projection(name: ast.AST) -> bool:
        return isinstance(name, ast.Name) and name.id.endswith("view")

    if isinstance(node, ast.Subscript) and projection(node.value):
        return isinstance(node.slice, ast.Constant | ast.JoinedStr)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and projection(node.func.value)
    )


def test_no_reader_indexes_a_projection_by_string_key() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
        for path in modules(*PROJECTION_READERS)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        if indexes_a_projection(node)
    ]
    assert offenders == [], "read the projection's attributes (store.OperationView)"
