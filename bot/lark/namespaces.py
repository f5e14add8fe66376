"""lark-oapi one namespace at a time: the SDK's umbrella packages run their `__init__` only
when a name is read from them.

`import lark_oapi.api.im.v1` first runs `lark_oapi/__init__.py`, which imports every API
namespace, its client and every event model: 176 MB and 1.5-3 s (issue 34), where the
bot's long connection and its IM calls need about 50 MB. The packages that only gather
(`lark_oapi`, `lark_oapi.api`, `lark_oapi.api.<ns>`, `.<ns>.<version>` and its `.model`)
are created without running their `__init__`; a submodule under them imports as usual,
and the first name read from one of them (`lark_oapi.Client`, `from lark_oapi.api.im.v1
import X`, a `*` import) runs its `__init__` then, in full. So the SDK is unmodified and
whole for whoever asks for the whole, and a process pays only for the namespaces it uses.
The core, ws and event packages load as they always do (their modules import each other in
the order their `__init__` gives). tests/bot/lark/test_namespaces.py holds both sides.
"""

from __future__ import annotations

import importlib.machinery
import sys
import threading
from types import ModuleType
from typing import Any

ROOT = "lark_oapi"


def gathers(name: str) -> bool:
    """`lark_oapi`, `lark_oapi.api`, `.api.<ns>`, `.api.<ns>.v<N>`, `.api.<ns>.v<N>.model`."""
    parts = name.split(".")
    if parts[0] != ROOT or len(parts) > 5 or (len(parts) > 1 and parts[1] != "api"):
        return False
    return len(parts) < 4 or (
        (parts[3][:1] == "v" and parts[3][1:].isdigit())
        and (len(parts) == 4 or parts[4] == "model")
    )


class _Deferred:
    """A package loader that runs the real `__init__` at the first name read from it."""

    def __init__(self, real: Any) -> None:
        self.real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self.real.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        lock = threading.RLock()
        state = {"run": False}
        real = self.real

        def __getattr__(name: str) -> Any:
            with lock:  # one thread runs it; another waits, then reads the result
                if not state["run"]:
                    # set first: while it runs, a name it has not defined yet is missing,
                    # as it would be in any package part way through its __init__
                    state["run"] = True
                    real.exec_module(module)
                    if name in module.__dict__:
                        return module.__dict__[name]
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

        module.__dict__["__getattr__"] = __getattr__


class _Finder:
    """On sys.meta_path: the gathering packages get the deferring loader."""

    @staticmethod
    def find_spec(
        name: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not gathers(name):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.submodule_search_locations is not None and spec.loader:
            spec.loader = _Deferred(spec.loader)  # type: ignore[assignment]
        return spec


def install() -> None:
    """Defer the gathering packages from now on. Idempotent; once `lark_oapi` is imported
    (in full, by anyone before this), it changes nothing."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
