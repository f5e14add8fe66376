"""Config errors that teach (`countersign config check`, `countersign run`): every problem at
once, "did you mean" for an unknown key, no problem that only follows from another invalid
value, and formats said in words, never as a regex.

(tests/bot/test_config.py holds the rest of the config's tests.)
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, StringConstraints, TypeAdapter, ValidationError

from bot.api.intake import ProposalIn
from bot.cli import main
from bot.config import DomainSettings, Settings, check_data, parse
from bot.config.pattern_words import PATTERN_WORDS, UNKNOWN_FORMAT
from bot.config.validation import problems_from
from kernel.problems import FieldProblem, ProblemsFound
from tests.support.processes import ROOT
from workers.domains import DOMAINS

ENVIRON = {"AGENT_TOKEN": "t" * 32, "COUNTERSIGN_LARK_APP_SECRET": "s" * 32, "HL_KEY": "k" * 64}
# `field: reason: fix`, the field path never containing spaces
PROBLEM_LINE = re.compile(r"^\S+: .+: .+$")
# what a regex looks like and words do not: anchors, classes, ranges, escapes, repeats
REGEX_RUN = re.compile(r"\^|\$|\[\^|\[[A-Za-z0-9]-|\\[dswDSWx]|\{\d+(,\d*)?\}|\(\?|\.\*|\.\+|\)\?")


def valid() -> dict[str, Any]:
    """A config that reads whole and has no problem: every test breaks one thing in it."""
    return {
        "lark": {"mode": "ws", "app_id": "cli_app", "tenant_keys": ["tenant-1"]},
        "web": {"sign_in": True, "public_url": "https://bot.example.com"},
        "operations": {"default_expires_in_s": 900, "max_expires_in_s": 3600},
        "audiences": [
            {
                "name": "ops",
                "chat_id": "oc_ops",
                "operators": ["ou_alice", "ou_bob"],
                "remind_before_s": 300,
                "escalate_to": "leads",
            },
            {"name": "leads", "chat_id": "oc_leads", "operators": ["ou_carol"]},
        ],
        "approval_rules": [
            {
                "name": "large",
                "audiences": ["ops"],
                "kinds": ["finance.order"],
                "above": "50000",
                "currency": "USDC",
                "required_confirmations": 2,
            }
        ],
        "proposers": [{"name": "agent", "token_env": "AGENT_TOKEN", "audiences": ["ops"]}],
        "domains": {
            "finance": {
                "accounts": [
                    {
                        "name": "hl",
                        "venue": "hyperliquid",
                        "budget": "1000",
                        "address": "0x" + "ab" * 20,
                        "agent_key_env": "HL_KEY",
                    }
                ],
                "hyperliquid": {"network": "emulator"},
            },
            "message": {
                "destinations": [
                    {"name": "acme", "chat_id": "oc_acme", "counterparty": "acme"},
                ]
            },
        },
    }


KeyPath = tuple[str | int, ...]


def changed(*edits: tuple[KeyPath, Any]) -> dict[str, Any]:
    """`valid()` with the value at each path set."""
    data = valid()
    for path, value in edits:
        *parent, last = path
        node: Any = data
        for part in parent:
            node = node[part]
        node[last] = value
    return data


def renamed(path: KeyPath, new_key: str) -> dict[str, Any]:
    """`valid()` with the key at `path` spelt `new_key`, its value kept."""
    data = valid()
    *parent, last = path
    node: Any = data
    for part in parent:
        node = node[part]
    node[new_key] = node.pop(last)
    return data


def problems_of(data: dict[str, Any], environ: dict[str, str] = ENVIRON) -> list[FieldProblem]:
    _settings, found = check_data(data, environ)
    for problem in found:
        assert PROBLEM_LINE.match(problem.line()), problem.line()
        assert not REGEX_RUN.search(problem.line()), problem.line()
    return found


def test_the_valid_config_has_no_problem() -> None:
    settings, found = check_data(valid(), ENVIRON)
    assert settings is not None and found == []


# -- every problem at once ----------------------------------------------------------------------


def test_independent_mistakes_in_different_tables_are_all_reported_at_once() -> None:
    data = changed(
        (("lark", "mode"), "websocket"),  # schema, [lark]
        (("web", "public_url"), "https://bot.example.com/ops"),  # schema, [web]
        (("domains", "message", "max_text_chars"), 0),  # schema, [domains.message]
        (("operations", "default_expires_in_s"), 7200),  # a check, [operations]
        (("cards",), {"timezone": "Mars/Olympus"}),  # a check, [cards]
        (("proposers", 0, "audiences"), ["treasury"]),  # a check, [[proposers]]
        (("store",), {"ulr": "sqlite+aiosqlite:///x.db"}),  # an unknown key, [store]
    )
    environ = {k: v for k, v in ENVIRON.items() if k != "AGENT_TOKEN"}  # the environment
    found = problems_of(data, environ)
    assert sorted(p.field for p in found) == sorted(
        [
            "lark.mode",
            "web.public_url",
            "domains.message.max_text_chars",
            "operations.default_expires_in_s",
            "cards.timezone",
            "proposers[0].audiences",
            "store.ulr",
            "proposers[0].token_env",
        ]
    )


def test_an_unknown_domain_table_hides_no_problem_of_the_known_ones() -> None:
    data = changed((("domains", "finanse"), {}), (("domains", "message", "max_text_chars"), 0))
    assert [p.field for p in problems_of(data)] == [
        "domains.message.max_text_chars",
        "domains.finanse",
    ]


# -- did you mean -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "typo", "meant"),
    [
        (("lark", "mode"), "mdoe", "mode"),
        (("lark",), "lakr", "lark"),
        (("audiences", 0, "operators"), "operator", "operators"),
        (("approval_rules", 0, "currency"), "curency", "currency"),
        (("domains", "finanse"), "finanse", "finance"),
        (("domains", "finance", "hyperliquid"), "hyperliqiud", "hyperliquid"),
        (("domains", "finance", "hyperliquid", "network"), "netwrok", "network"),
        (("domains", "finance", "accounts", 0, "budget"), "budjet", "budget"),
        (("domains", "message", "destinations", 0, "counterparty"), "counterpary", "counterparty"),
    ],
)
def test_an_unknown_key_names_the_key_it_is_closest_to_and_nothing_else(
    path: KeyPath, typo: str, meant: str
) -> None:
    data = valid()
    if path == ("domains", "finanse"):  # a whole table misspelt
        data["domains"]["finanse"] = data["domains"].pop("finance")
    else:
        data = renamed(path, typo)
    where = ".".join(str(part) for part in path[:-1])
    where = re.sub(r"\.(\d+)", r"[\1]", where)
    [problem] = problems_of(data)  # the missing key it was meant for is not another problem
    assert problem.field == (f"{where}.{typo}" if where else typo)
    assert (problem.reason, problem.fix) == (f"unknown key {typo!r}", f"did you mean {meant!r}?")


def test_an_unknown_key_close_to_none_lists_the_keys_of_its_table() -> None:
    [problem] = problems_of(changed((("lark", "colour"), "blue")))
    assert (problem.field, problem.reason) == ("lark.colour", "unknown key 'colour'")
    assert problem.fix.startswith("remove it; the keys here are ")
    assert {"mode", "app_id", "tenant_keys", "base_url"} <= set(
        problem.fix.removeprefix("remove it; the keys here are ").split(", ")
    )


def test_run_refuses_with_the_same_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("bot.cli.serving.configure", lambda: None)  # keep pytest's logging
    config = tmp_path / "countersign.toml"
    config.write_text(
        '[lark]\nmdoe = "ws"\n\n[store]\nschema = "Bad Schema"\n\n'
        '[[proposers]]\nname = "agent"\ntoken_env = "AGENT_TOKEN"\n',
        encoding="utf-8",
    )
    monkeypatch.delenv("AGENT_TOKEN", raising=False)
    assert main(["run", "--config", str(config)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert "lark.mdoe: unknown key 'mdoe': did you mean 'mode'?" in lines
    # in the same answer, not after the schema is mended: the secret it names is unset
    assert any(line.startswith("proposers[0].token_env: ") for line in lines), lines
    assert (
        "store.schema: is not a PostgreSQL schema name: use up to 63 lower-case letters, "
        "digits and _, not starting with a digit" in lines
    )
    assert not any(REGEX_RUN.search(line) for line in lines)


# -- no cascades --------------------------------------------------------------------------------


def test_an_invalid_lark_mode_is_one_problem_naming_the_valid_modes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    [problem] = problems_of(changed((("lark", "mode"), "websocket")))
    assert problem.field == "lark.mode"
    assert problem.fix == 'use "ws", "webhook" or "off"'
    # and so says `config check`, where web sign-in once also read the defaulted [lark]
    config = tmp_path / "countersign.toml"
    config.write_text(
        '[lark]\nmode = "websocket"\napp_id = "cli_app"\ntenant_keys = ["tenant-1"]\n\n'
        '[web]\nsign_in = true\npublic_url = "https://bot.example.com"\n\n'
        '[[proposers]]\nname = "agent"\ntoken_env = "AGENT_TOKEN"\n',
        encoding="utf-8",
    )
    for name, value in ENVIRON.items():
        monkeypatch.setenv(name, value)
    assert main(["config", "check", "--config", str(config)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{config}: 1 problem; each says what to change:",
        'lark.mode: is not one of the allowed values: use "ws", "webhook" or "off"',
    ]


@pytest.mark.parametrize(
    ("edits", "field"),
    [
        ([(("lark", "app_secret_env"), "lark_secret")], "lark.app_secret_env"),
        ([(("lark", "tenant_keys"), "tenant-1")], "lark.tenant_keys"),
        ([(("web", "session_idle_s"), 7200), (("web", "session_max_s"), 3600)], "web"),
        ([(("audiences", 0, "required_confirmations"), 11)], "audiences[0].required_confirmations"),
        ([(("audiences", 0, "escalate_to"), "the leads")], "audiences[0].escalate_to"),
        ([(("audiences", 1, "name"), "the leads")], "audiences[1].name"),
        ([(("audiences", 0, "chat_id"), "ops")], "audiences[0].chat_id"),
        ([(("audiences", 0, "operators"), ["ou_alice", "bob"])], "audiences[0].operators[1]"),
        ([(("audiences", 0), "ops")], "audiences[0]"),
        ([(("operations", "max_expires_in_s"), 10)], "operations.max_expires_in_s"),
        ([(("proposers", 0, "token_env"), "agent token")], "proposers[0].token_env"),
        ([(("approval_rules", 0, "above"), "50,000")], "approval_rules[0].above"),
        ([(("approval_rules", 0, "currency"), "usdc")], "approval_rules[0].currency"),
        (
            [(("domains", "finance", "hyperliquid", "network"), "main")],
            "domains.finance.hyperliquid.network",
        ),
        (
            [(("domains", "finance", "accounts", 0, "agent_key_env"), "hl key")],
            "domains.finance.accounts[0].agent_key_env",
        ),
        (
            [(("domains", "message", "destinations", 0, "chat_id"), "acme")],
            "domains.message.destinations[0].chat_id",
        ),
    ],
)
def test_an_invalid_value_is_one_problem_and_nothing_that_follows_from_it(
    edits: list[tuple[KeyPath, Any]], field: str
) -> None:
    assert [p.field for p in problems_of(changed(*edits))] == [field]


# -- formats in words, never a regex ------------------------------------------------------------


def _patterns(schema: Any) -> Iterator[str]:
    """Every string pattern in a pydantic core schema."""
    if isinstance(schema, dict):
        if schema.get("type") == "str" and isinstance(schema.get("pattern"), str):
            yield schema["pattern"]
        for value in schema.values():
            yield from _patterns(value)
    elif isinstance(schema, list | tuple):
        for value in schema:
            yield from _patterns(value)


def _schema_patterns() -> set[str]:
    """Patterns reachable from the Settings model, every domain's table and payload models,
    and the API's proposal body."""
    models: list[type[BaseModel]] = [Settings, ProposalIn, *DomainSettings.table_models().values()]
    for plugin in DOMAINS.values():
        payloads = (plugin.schema(version) for version in plugin.versions)
        models += [payload for payload in payloads if payload is not None]
    return {pattern for model in models for pattern in _patterns(model.__pydantic_core_schema__)}


def _source_patterns() -> set[str]:
    """Every `pattern="..."` written in the packages (MCP arguments, a model not yet walked)."""
    found: set[str] = set()
    for directory in ("bot", "workers", "kernel"):
        for path in (ROOT / directory).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.keyword) and node.arg == "pattern":
                    if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                        found.add(node.value.value)
    return found


def test_the_walk_finds_the_patterns_of_nested_tables_and_payloads() -> None:
    found = _schema_patterns()
    assert r"^0x[0-9a-fA-F]{40}$" in found  # [[domains.finance.accounts]] address
    assert r"^om_[A-Za-z0-9_-]{1,120}$" in found  # a message payload's reply-to id
    assert r"^([01][0-9]|2[0-3]):[0-5][0-9]$" in found  # [audit] witness_at


def test_every_pattern_of_the_config_and_the_proposal_schemas_has_words() -> None:
    patterns = _schema_patterns() | _source_patterns()
    missing = sorted(patterns - set(PATTERN_WORDS))
    assert not missing, "give these patterns words in bot/config/pattern_words.py: " + ", ".join(
        missing
    )
    for pattern, words in PATTERN_WORDS.items():
        re.compile(pattern)
        assert all(words) and not any(REGEX_RUN.search(text) for text in words), pattern


@pytest.mark.parametrize(
    ("edits", "field", "reason"),
    [
        (
            [(("web", "public_url"), "https://bot.example.com/")],
            "web.public_url",
            "must be an https URL with no path",
        ),
        ([(("audit",), {"witness_at": "9am"})], "audit.witness_at", "is not a time of day"),
        ([(("http",), {"allowed_hosts": ["bot example"]})], "http.allowed_hosts[0]", "host name"),
        (
            [(("domains", "finance", "hyperliquid", "url"), "https://api.example.com/info")],
            "domains.finance.hyperliquid.url",
            "must be an http(s) URL with no path",
        ),
        (
            [(("domains", "finance", "accounts", 0, "address"), "0x12")],
            "domains.finance.accounts[0].address",
            "is not an account address",
        ),
        ([(("people",), {"ou_alice": "*Alice*"})], "people.ou_alice", "plain display name"),
    ],
)
def test_a_value_out_of_format_is_told_in_words(
    edits: list[tuple[KeyPath, Any]], field: str, reason: str
) -> None:
    [problem] = problems_of(changed(*edits))
    assert problem.field == field and reason in problem.reason
    assert problem.fix == PATTERN_WORDS[_pattern_of(problem)][1]


def _pattern_of(problem: FieldProblem) -> str:
    return next(p for p, (reason, _fix) in PATTERN_WORDS.items() if reason == problem.reason)


def test_a_pattern_without_words_still_shows_no_regex() -> None:
    adapter = TypeAdapter(Annotated[str, StringConstraints(pattern=r"^zz[0-9]{3}$")])
    with pytest.raises(ValidationError) as raised:
        adapter.validate_python("nope")
    [problem] = problems_from(raised.value, "code")
    assert (problem.reason, problem.fix) == UNKNOWN_FORMAT


def test_parse_says_the_same_as_check_data() -> None:
    data = renamed(("audiences", 0, "operators"), "operator")
    with pytest.raises(ProblemsFound) as raised:
        parse(data)
    assert [p.line() for p in raised.value.problems] == [
        "audiences[0].operator: unknown key 'operator': did you mean 'operators'?"
    ]
