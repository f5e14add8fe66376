"""Every registered domain has every word, tone and finality its outcomes and terms need.

A domain that forgets a word fails here, not silently on a card: the kind's title and
headlines in en and zh, a label for every term its examples project, and for every status
its runner can report: words, a tone, and whether it is final. The toy domain
(tests/support/toy_domain.py), registered at run time, is held to the same rules.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import get_args

import pytest

from store import Execution, Tone
from tests.support.toy_domain import LampService, LampV1, ToyDomain, observed
from workers import execution_failures, executor
from workers.domains import DOMAINS, meaning, registered
from workers.domains.checked import Plugin
from workers.domains.execution import CORE_OUTCOMES, UNKNOWN
from workers.domains.finance.venues.model import OrderStatus
from workers.domains.words import Meaning, Said

BUILT_IN = ("finance.order", "message.send")


@pytest.fixture(scope="module", autouse=True)
def toy() -> Iterator[Plugin]:
    with registered(ToyDomain(LampService())) as plugin:
        yield plugin


def kinds() -> list[str]:
    """Every kind registered when the tests are collected, and the toy."""
    return sorted({*DOMAINS, "toy.lamp"})


def said(words: Said, what: str) -> None:
    assert isinstance(words, Said), what
    assert words.en.strip() and words.zh.strip(), f"{what}: {words}"


def full_meaning(found: Meaning, what: str) -> None:
    said(found.words, what)
    assert isinstance(found.tone, Tone), what
    assert isinstance(found.final, bool), what


def test_the_built_in_domains_and_the_toy_are_registered() -> None:
    assert set(BUILT_IN) <= set(DOMAINS)
    assert "toy.lamp" in DOMAINS


@pytest.mark.parametrize("kind", kinds())
def test_a_kind_has_its_title_and_headlines_in_every_language(kind: str) -> None:
    words = DOMAINS[kind].words
    said(words.title, f"{kind} title")
    said(words.waiting, f"{kind} waiting")
    said(words.partly, f"{kind} partly")
    for language in ("en", "zh"):
        text = getattr(words.partly, language)
        assert "{count}" in text and "{required}" in text, (kind, language, text)
        assert text.format(count=1, required=2) != text
    for name, label in words.terms.items():
        said(label, f"{kind} term {name}")


@pytest.mark.parametrize("kind", kinds())
def test_every_term_an_example_projects_carries_a_label_in_every_language(kind: str) -> None:
    plugin = DOMAINS[kind]
    if kind == "toy.lamp":
        assert plugin.examples, "the toy shows how examples are given"
    for example in plugin.examples:
        model = plugin.schema(plugin.versions[-1])
        assert model is not None
        projection = plugin.project(model.model_validate(dict(example.payload)))
        for language in ("en", "zh"):
            assert projection["words"]["title"][language], (kind, example.name)
        assert projection["terms"], (kind, example.name)
        for term in projection["terms"]:
            label = term.get("label")
            assert isinstance(label, dict), f"{kind} {example.name}: {term['name']} has no label"
            assert label.get("en") and label.get("zh"), (kind, example.name, term)


@pytest.mark.parametrize("kind", kinds())
def test_every_outcome_has_words_a_tone_and_finality(kind: str) -> None:
    outcomes = DOMAINS[kind].outcomes
    assert outcomes, kind
    for status, found in outcomes.items():
        full_meaning(found, f"{kind} {status}")
        assert meaning(kind, status) == found  # the registry answers with the domain's own


def test_the_executors_own_statuses_have_their_meaning() -> None:
    for status, found in CORE_OUTCOMES.items():
        full_meaning(found, status)
    # what the executor and its failure handling write themselves (workers/executor.py)
    written = {
        "not_submitted",
        Execution.PREFLIGHT_REJECTED.value,
        Execution.RESERVATION_REFUSED.value,
        *literal_statuses(executor, "Observed", "Observation"),
        *literal_statuses(execution_failures, "Observed", "Observation"),
    }
    assert {UNKNOWN, "unresolved", "not_submitted"} <= written, written
    assert written <= set(CORE_OUTCOMES), written - set(CORE_OUTCOMES)
    # unknown is the one that keeps the executor (and every waiter) going
    assert CORE_OUTCOMES[UNKNOWN].final is False
    assert all(found.final for status, found in CORE_OUTCOMES.items() if status != UNKNOWN)


@pytest.mark.parametrize("kind", kinds())
def test_no_domain_redefines_a_core_status(kind: str) -> None:
    assert not set(DOMAINS[kind].outcomes) & set(CORE_OUTCOMES), kind


def literal_statuses(module: ModuleType, *calls: str) -> set[str]:
    """The statuses `module` writes out as the status argument of `calls`
    (`Observed("sent", ...)`, `Observation(stage, UNKNOWN, ...)`): a string, or a name the
    module holds a string by (its own constant or an imported one)."""
    tree = ast.parse(Path(inspect.getfile(module)).read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        if name not in calls:
            continue
        position = 1 if name == "Observation" else 0
        status = node.args[position] if len(node.args) > position else None
        for keyword in node.keywords:
            if keyword.arg == "status":
                status = keyword.value
        if isinstance(status, ast.Constant) and isinstance(status.value, str):
            found.add(status.value)
        elif isinstance(status, ast.Name) and isinstance(vars(module).get(status.id), str):
            found.add(vars(module)[status.id])
    return found


def package_modules(plugin: Plugin) -> list[ModuleType]:
    """The modules of the package (or the lone module) a domain is written in."""
    module = sys.modules[type(plugin.domain).__module__]
    if module.__name__.startswith("tests."):
        return [module]
    package = module.__name__.rsplit(".", 1)[0]
    root = Path(inspect.getfile(module)).parent
    names = [
        ".".join((package, *path.relative_to(root).with_suffix("").parts))
        for path in sorted(root.rglob("*.py"))
    ]
    return [importlib.import_module(name.removesuffix(".__init__")) for name in names]


# Statuses a runner takes from its venue rather than writing them out (Observed(state.status)).
VENUE_STATUSES: dict[str, frozenset[str]] = {
    "finance.order": frozenset(get_args(OrderStatus)),  # the simulated venue's order states
    "message.send": frozenset({"sent", "rejected"}),  # Lark posted it, or refused it for good
}


@pytest.mark.parametrize("kind", kinds())
def test_every_status_a_runner_can_report_is_declared(kind: str) -> None:
    plugin = DOMAINS[kind]
    reported = set(VENUE_STATUSES.get(kind, frozenset()))
    for module in package_modules(plugin):
        reported |= literal_statuses(module, "Observed")
    assert reported, f"{kind}: no status found that its runner reports"
    undeclared = reported - set(plugin.outcomes) - set(CORE_OUTCOMES)
    assert not undeclared, f"{kind} reports {sorted(undeclared)} without declaring them"


def test_the_simulated_venue_order_states_are_all_declared_with_their_finality() -> None:
    outcomes = DOMAINS["finance.order"].outcomes
    assert set(get_args(OrderStatus)) <= set(outcomes)
    # the venue still works these: waiting for `final` waits through them
    moving = {status for status, found in outcomes.items() if not found.final}
    assert moving == {"accepted", "resting", "partially_filled"}


def test_every_status_the_toy_lamp_service_reports_is_declared() -> None:
    """The toy's statuses come from its service: switch lamps every way it knows and look
    each switch up until it settles."""
    service = LampService(broken={"attic"})
    switches = {
        "cs-on": LampV1(lamp="desk", state="on", brightness=60),
        "cs-off": LampV1(lamp="hall", state="off"),
        "cs-broken": LampV1(lamp="attic", state="on"),
    }
    reported: list[str] = []
    for client_id, payload in switches.items():
        reported.append(observed(service.switch(client_id, payload)).status)
        for _ in range(service.warm_after_looks):
            found = service.look(client_id)
            assert found is not None
            reported.append(observed(found).status)
    assert set(reported) == {"warming", "lit", "off", "refused"}, reported
    outcomes = DOMAINS["toy.lamp"].outcomes
    assert set(reported) <= set(outcomes)
    assert outcomes["warming"].final is False and outcomes["warming"].tone is Tone.WORKING
    assert all(outcomes[status].final for status in ("lit", "off", "refused"))
