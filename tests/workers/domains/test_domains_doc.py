"""docs/domains.md ("Adding a domain") stays true to the contract: its tables name every
attribute and hook of `Domain` and nothing else, and its runner section every method of
`Runner`, so a hook added to base.py or execution.py without a word in the guide fails here."""

from __future__ import annotations

import inspect
import re

from tests.support.processes import ROOT
from workers.domains.base import Domain
from workers.domains.execution import Runner

GUIDE = ROOT / "docs" / "domains.md"


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _public(cls: type) -> set[str]:
    names = set(getattr(cls, "__annotations__", {}))
    names |= {name for name, _ in inspect.getmembers(cls, inspect.isfunction)}
    return {name for name in names if not name.startswith("_")}


def test_the_guide_names_every_domain_attribute_and_hook() -> None:
    section = _section(GUIDE.read_text(encoding="utf-8"), "`Domain[P, S]`")
    first_cells = re.findall(r"^\| ([^|]+) \|", section, re.MULTILINE)
    named = {name for cell in first_cells for name in re.findall(r"`([a-z_]+)[`(]", cell)}
    # `schema(version)` is the helper over payload_models, not something an author writes
    assert named == _public(Domain) - {"schema"}


def test_the_guide_names_every_runner_method() -> None:
    section = _section(GUIDE.read_text(encoding="utf-8"), "The runner")
    named = set(re.findall(r"`([a-z_]+)\(", section))
    methods = _public(Runner) - {"kind", "executor_name", "executor_revision", "enabled"}
    assert methods <= named
