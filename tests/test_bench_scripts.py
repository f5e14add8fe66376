"""Every script in bench/ still imports: a benchmark nobody can start measures nothing (one
broke silently when a helper it imported moved to its domain's package)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.processes import ENV, ROOT

SCRIPTS = sorted(path.stem for path in (ROOT / "bench").glob("*.py"))


def test_every_bench_script_imports() -> None:
    assert "confirm_to_outcome" in SCRIPTS
    # one process, as `python bench/<script>.py` runs them: bench/ first on the path; each
    # failure named
    probe = (
        "import importlib, sys, traceback\n"
        "sys.path[:0] = ['bench', '.']\n"
        "failed = 0\n"
        f"for name in {SCRIPTS!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception:\n"
        "        failed += 1\n"
        "        print(name, traceback.format_exc(limit=3))\n"
        "sys.exit(failed)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
