"""config.example.toml, the Settings schema, and `countersign config check` as a real process."""

from __future__ import annotations

import inspect
import json
import os
import re
import secrets
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from bot.config import (
    AudienceSettings,
    DomainSettings,
    ProposerSettings,
    Settings,
    check,
    check_data,
    parse,
    read_file,
)
from bot.config.profiles import DEV_CHATS, dev_settings
from tests.support.backends import Backend
from tests.support.processes import ROOT
from workers.domains import DOMAINS
from workers.domains.finance.settings import FinanceAccount, FinanceSettings
from workers.domains.message.settings import Destination

EXAMPLE = ROOT / "config.example.toml"
TOKEN_ENV = "COUNTERSIGN_TOKEN"
# `field: reason: fix`, the field path never containing spaces.
PROBLEM_LINE = re.compile(r"^\S+: .+: .+$")


# -- the example file ------------------------------------------------------------------------


def test_example_parses_and_has_no_problems_once_the_token_is_exported() -> None:
    settings = read_file(EXAMPLE)
    assert check(settings, {TOKEN_ENV: "x" * 32}) == []


def test_example_without_the_token_reports_exactly_that() -> None:
    problems = check(read_file(EXAMPLE), {})
    assert [(p.field, p.reason) for p in problems] == [
        ("proposers[0].token_env", f"environment variable {TOKEN_ENV} is not set")
    ]


def test_example_mirrors_the_dev_profile(tmp_path: Path) -> None:
    example = read_file(EXAMPLE)
    dev = dev_settings(tmp_path)
    assert example.audiences == dev.audiences
    # the dev profile keeps its venue state under its data dir, and has no service of yours
    # to call (the example configures one, `countersign demo` starts its own); everything
    # else matches
    mirrored = {"finance": {"venue_path"}, "service": True}
    assert example.domains.model_dump(exclude=mirrored) == dev.domains.model_dump(exclude=mirrored)
    finance = dev.domains.for_kind("finance.order")
    assert isinstance(finance, FinanceSettings)
    assert finance.venue_path == str((tmp_path / "sim-venue.db").resolve())
    assert [(p.name, p.kinds, p.audiences) for p in example.proposers] == [
        (p.name, p.kinds, p.audiences) for p in dev.proposers
    ]
    assert example.proposers[0].token_env == TOKEN_ENV
    assert example.lark.mode == "off"
    # PostgreSQL-only, so present only as a comment.
    assert example.store.schema_name is None
    assert re.search(r"^# schema = ", EXAMPLE.read_text(encoding="utf-8"), re.MULTILINE)


def test_example_names_secrets_only_through_environment_variables() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    keys = re.findall(r"^#?\s*([a-z_]+)\s*=", text, re.MULTILINE)
    secretish = [k for k in keys if re.search(r"secret|token|password|key", k)]
    assert secretish, "the example should name its secret variables"
    assert all(k.endswith("_env") or k == "tenant_keys" for k in secretish), secretish


# -- every setting is documented ---------------------------------------------------------------


def _models_in(annotation: object) -> list[type[BaseModel]]:
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]


def _setting_keys(model: type[BaseModel], table: str = "") -> set[tuple[str, str]]:
    """(TOML table, key) for every leaf field reachable from `model`; under [domains], the
    table of every registered domain."""
    keys: set[tuple[str, str]] = set()
    if model is DomainSettings:
        for plugin in DOMAINS.values():
            table_name = f"{table}.{plugin.config_table}"
            keys |= _setting_keys(plugin.settings_model, table_name)
    for name, field in model.model_fields.items():
        key = field.alias or name
        nested = _models_in(field.annotation)
        if nested:
            for sub in nested:
                keys |= _setting_keys(sub, f"{table}.{key}" if table else key)
        else:
            keys.add((table, key))
    return keys


def _documented_keys(text: str) -> set[tuple[str, str]]:
    """(TOML table, key) for every key in the file, commented out (`# key = ...`) or not."""
    keys: set[tuple[str, str]] = set()
    table = ""
    for raw in text.splitlines():
        line = raw.strip()
        # a header commented out documents an optional table (`# [domains.finance.hyperliquid]`)
        header = re.fullmatch(r"#?\s*\[\[?\s*([A-Za-z0-9_.]+)\s*\]\]?", line)
        if header:
            table = header[1]
            # a table documents its own key (a map such as [people] has no fixed keys)
            parent, _, name = table.rpartition(".")
            keys.add((parent, name))
            continue
        key = re.match(r"#?\s*([A-Za-z0-9_]+)\s*=", line)
        if key:
            keys.add((table, key[1]))
    return keys


def test_the_schema_walk_reaches_every_section_and_list_item_model() -> None:
    expected = _setting_keys(Settings)
    tables = {
        "audiences": AudienceSettings,
        "proposers": ProposerSettings,
        "domains.finance.accounts": FinanceAccount,
        "domains.message.destinations": Destination,
    }
    for table, model in tables.items():
        assert {key for t, key in expected if t == table} == set(model.model_fields), table
    for item in [
        ("store", "url"),
        ("store", "schema"),  # the alias, not the attribute name schema_name
        ("store", "pool_size"),
        ("http", "proposer_burst"),
        ("lark", "verification_token_env"),
        ("audiences", "operators"),
        ("proposers", "token_env"),
        ("domains.finance", "enabled"),
        ("domains.finance.accounts", "budget"),
        ("domains.message", "max_text_chars"),
        ("domains.message.destinations", "ops_chat_id"),
        ("operations", "expiry_sweep_s"),
    ]:
        assert item in expected
    assert ("store", "schema_name") not in expected


def test_every_setting_is_documented_in_the_example() -> None:
    documented = _documented_keys(EXAMPLE.read_text(encoding="utf-8"))
    missing = sorted(_setting_keys(Settings) - documented)
    assert not missing, "settings missing from config.example.toml: " + ", ".join(
        f"[{table}] {key}" for table, key in missing
    )


def test_every_documented_setting_is_preceded_by_a_comment() -> None:
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines):
        if re.match(r"[A-Za-z0-9_]+\s*=", line):
            assert lines[number - 1].startswith("#"), f"line {number + 1} is undocumented: {line}"


# -- check_data: every problem at once -----------------------------------------------------------


def test_check_data_keeps_file_indices_and_names_of_broken_items() -> None:
    data = {
        "audiences": [
            {"name": "ops", "chat_id": "not-a-chat", "operators": ["ou_alice"]},
            {"name": "desk", "chat_id": "oc_desk", "operators": ["ou_bob"]},
        ],
        "proposers": [
            {"name": "broken", "token_env": "lower-case"},
            {"name": "agent", "token_env": "AGENT_TOKEN", "kinds": ["nope"], "audiences": ["ops"]},
        ],
    }
    settings, problems = check_data(data, {"AGENT_TOKEN": "y" * 16})
    assert settings is None
    fields = [(p.field, p.reason) for p in problems]
    assert fields[0][0] == "audiences[0].chat_id"
    assert ("proposers[0].token_env", fields[1][1]) == fields[1]
    # The valid proposer keeps its index in the file, not its index among valid ones.
    assert ("proposers[1].kinds", "unknown kind 'nope'") in fields
    # Audience `ops` exists (it is only broken), so referring to it is not a problem.
    assert not any("no audience named" in reason for _field, reason in fields)
    assert len(problems) == 3


def test_a_counterparty_chat_can_be_neither_an_audience_nor_an_ops_chat() -> None:
    # Cards (terms, who decided) and filing receipts are internal: a configuration that would
    # post them into a message destination's chat is refused before anything runs.
    data = {
        "audiences": [
            {"name": "ops", "chat_id": "oc_ops", "operators": ["ou_alice"]},
            {"name": "leaky", "chat_id": "oc_acme", "operators": ["ou_bob"]},
        ],
        "proposers": [{"name": "agent", "token_env": "AGENT_TOKEN"}],
        "domains": {
            "message": {
                "destinations": [
                    {
                        "name": "acme",
                        "chat_id": "oc_acme",
                        "counterparty": "acme",
                        "ops_chat_id": "oc_ops",
                    },
                    {
                        "name": "beta",
                        "chat_id": "oc_beta",
                        "counterparty": "beta",
                        "ops_chat_id": "oc_acme",
                    },
                ]
            }
        },
    }
    settings, problems = check_data(data, {"AGENT_TOKEN": "y" * 16})
    assert settings is not None
    assert [p.field for p in problems] == [
        "audiences[1].chat_id",
        "domains.message.destinations[1].ops_chat_id",
    ]
    assert all("acme" in p.reason and p.fix for p in problems)


def test_a_baseline_file_that_does_not_read_as_one_is_refused_naming_the_field(
    tmp_path: Path,
) -> None:
    good, broken = tmp_path / "good.json", tmp_path / "broken.json"
    good.write_text('{"counterparties": {"acme": {"contract": {"status": "signed"}}}}')
    broken.write_text('{"counterparties": {"acme": {"contract": {"state": "signed"}}}}')
    destinations = [
        {"name": name, "chat_id": f"oc_{name}", "counterparty": name, "baseline_file": str(path)}
        for name, path in (("acme", good), ("beta", broken), ("gamma", tmp_path / "gone.json"))
    ]
    data = {
        "audiences": [{"name": "ops", "chat_id": "oc_ops", "operators": ["ou_alice"]}],
        "proposers": [{"name": "agent", "token_env": "AGENT_TOKEN"}],
        "domains": {"message": {"destinations": destinations}},
    }
    settings, problems = check_data(data, {"AGENT_TOKEN": "y" * 16})
    assert settings is not None
    assert [(p.field, p.reason.split(" (")[0]) for p in problems] == [
        ("domains.message.destinations[1].baseline_file", f"{broken} is not a baseline file"),
        (
            "domains.message.destinations[2].baseline_file",
            f"{tmp_path / 'gone.json'} cannot be read",
        ),
    ]
    assert all("counterparties" in p.fix for p in problems)


# -- `countersign config check` as a real process ----------------------------------------------


def _run(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("COUNTERSIGN_")}
    environ["PYTHONDONTWRITEBYTECODE"] = "1"
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environ.get("PYTHONPATH")]))
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "config", "check", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _tree(path: Path) -> set[Path]:
    return set(path.rglob("*"))


def test_config_check_of_the_example_with_the_token_set(tmp_path: Path) -> None:
    token = secrets.token_hex(24)
    before = _tree(tmp_path)
    result = _run(tmp_path, "--config", str(EXAMPLE), env={TOKEN_ENV: token})
    assert result.returncode == 0, result.stderr
    assert token not in result.stdout
    assert token not in result.stderr
    shown = json.loads(result.stdout)
    assert shown["proposers"][0]["token_env"] == TOKEN_ENV
    assert shown["proposers"][0]["token"] == "<set, redacted>"
    assert shown["lark"]["app_secret"] == "<missing>"
    assert shown["audiences"][0]["operators"] == ["ou_alice", "ou_bob", "ou_carol"]
    assert "config ok" in result.stderr
    # Checking opens no database: ./var is not created under the working directory.
    assert _tree(tmp_path) == before


def test_config_check_of_the_example_without_the_token(tmp_path: Path) -> None:
    result = _run(tmp_path, "--config", str(EXAMPLE))
    assert result.returncode != 0
    assert re.search(
        rf"^proposers\[0\]\.token_env: environment variable {TOKEN_ENV} is not set: "
        rf"export {TOKEN_ENV}=",
        result.stderr,
        re.MULTILINE,
    ), result.stderr
    assert json.loads(result.stdout)["proposers"][0]["token"] == "<missing>"
    assert "config ok" not in result.stderr


def test_config_check_lists_every_problem_at_once_and_writes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "var" / "countersign.db"
    config = tmp_path / "broken.toml"
    config.write_text(
        f"""
[store]
url = "sqlite+aiosqlite:///{store}"

[lark]
mode = "ws"
tenant_keys = ["tenant-1"]

[[audiences]]
name = "ops"
chat_id = "oc_ops"
operators = ["ou_alice", "alice"]

[[audiences]]
name = "ops"
chat_id = "oc_ops_2"
operators = ["ou_bob"]

[[proposers]]
name = "agent"
token_env = "COUNTERSIGN_TOKEN"
kinds = ["finance.order", "crypto.swap"]
audiences = ["ops", "treasury"]
""",
        encoding="utf-8",
    )
    before = _tree(tmp_path)
    env = {"COUNTERSIGN_TOKEN": "z" * 32, "COUNTERSIGN_LARK_APP_SECRET": "s" * 32}
    result = _run(tmp_path, "--config", str(config), env=env)
    assert result.returncode != 0
    summary, *lines = result.stderr.splitlines()
    # Summary first (how many, from where), then one `field: reason: fix` line each.
    assert summary == f"{config}: {len(lines)} problems; each says what to change:"
    assert len(lines) >= 5
    for line in lines:
        assert PROBLEM_LINE.match(line), line
    fields = [line.split(": ", 1)[0] for line in lines]
    for expected in [
        "audiences[0].operators[1]",  # not an ou_ open_id
        "audiences",  # `ops` twice
        "proposers[0].kinds",  # crypto.swap
        "proposers[0].audiences",  # treasury
        "lark.app_id",  # ws without app_id
    ]:
        assert expected in fields, f"{expected} not in:\n{result.stderr}"
    operator_lines = [line for line in lines if line.startswith("audiences[0].operators[1]")]
    assert operator_lines == [
        "audiences[0].operators[1]: is not a Lark user open_id: "
        "use the user's open_id, which starts with ou_"
    ]
    assert not any("'alice'" in line for line in lines), "rejected values are never echoed"
    assert any("'crypto.swap'" in line for line in lines)
    assert any("'treasury'" in line for line in lines)
    assert not any("no audience named 'ops'" in line for line in lines)
    assert "config ok" not in result.stderr
    assert _tree(tmp_path) == before
    assert not store.exists()


def test_config_check_hides_the_postgresql_password(tmp_path: Path) -> None:
    password = "pg-" + secrets.token_hex(12)
    config = tmp_path / "pg.toml"
    config.write_text(
        f"""
[store]
url = "postgresql+asyncpg://countersign:{password}@db.internal:5432/countersign"
schema = "countersign"
pool_size = 20

[[audiences]]
name = "ops"
chat_id = "oc_ops"
operators = ["ou_alice"]

[[proposers]]
name = "dev-agent"
token_env = "{TOKEN_ENV}"
""",
        encoding="utf-8",
    )
    result = _run(tmp_path, "--config", str(config), env={TOKEN_ENV: "t" * 32})
    # db.internal does not resolve here: the one problem names the URL, password hidden.
    assert result.returncode == 2, result.stderr
    assert password not in result.stdout
    assert password not in result.stderr
    shown_url = "postgresql+asyncpg://countersign:***@db.internal:5432/countersign"
    assert f"store.url: cannot connect to {shown_url}: " in result.stderr
    store = json.loads(result.stdout)["store"]
    assert "***" in store["url"]
    assert store["url"].startswith("postgresql+asyncpg://countersign:***@db.internal:5432/")
    assert store["schema"] == "countersign"
    assert store["pool_size"] == 20


def test_config_check_validates_the_port_override(tmp_path: Path) -> None:
    result = _run(tmp_path, "--config", str(EXAMPLE), "--port", "70000", env={TOKEN_ENV: "t" * 32})
    assert result.returncode != 0
    assert re.search(r"^http\.port: ", result.stderr, re.MULTILINE), result.stderr
    ok = _run(tmp_path, "--config", str(EXAMPLE), "--port", "9191", env={TOKEN_ENV: "t" * 32})
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["http"]["port"] == 9191


def test_config_check_of_a_missing_file(tmp_path: Path) -> None:
    result = _run(tmp_path, "--config", str(tmp_path / "nope.toml"))
    assert result.returncode != 0
    assert re.search(r"^--config: .*nope\.toml does not exist: ", result.stderr, re.MULTILINE)


@pytest.mark.parametrize("extra", [[], ["--port", "8181"]])
def test_config_check_dev(tmp_path: Path, extra: list[str]) -> None:
    before = _tree(tmp_path)
    result = _run(tmp_path, "--dev", *extra)
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["proposers"][0]["name"] == "dev-agent"
    assert shown["proposers"][0]["token"] == "<set, redacted>"
    assert shown["lark"]["mode"] == "off"
    assert "config ok" in result.stderr
    assert _tree(tmp_path) == before


def test_workers_are_inline_or_a_process_and_anything_else_is_named_with_the_fix() -> None:
    assert parse({"execution": {"workers": "process"}}).execution.workers == "process"
    assert parse({"execution": {"workers": "inline"}}).execution.workers == "inline"
    assert parse({}).execution.workers == "process"  # answers and workers on their own cores
    _settings, problems = check_data({"execution": {"workers": "threads"}}, {})
    [problem] = [p for p in problems if p.field == "execution.workers"]
    assert "inline" in problem.line() and "process" in problem.line()


def _store_config(tmp_path: Path, url: str) -> Path:
    config = tmp_path / "store.toml"
    config.write_text(
        f'[store]\nurl = "{url}"\n[[proposers]]\nname = "a"\ntoken_env = "{TOKEN_ENV}"\n',
        encoding="utf-8",
    )
    return config


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("mysql://db/countersign", "store.url: names no driver countersign runs on: start it with"),
        (
            "postgresql+asyncpg://postgres@127.0.0.1:1/test",
            "store.url: cannot connect to postgresql+asyncpg://postgres@127.0.0.1:1/test: "
            "nothing listens at 127.0.0.1:1: start PostgreSQL or fix the host and port",
        ),
        (
            "postgresql+asyncpg://postgres@127.0.0.1:5432/countersign_no_such_db",
            "database 'countersign_no_such_db' does not exist: create it or fix the name",
        ),
        ("sqlite+aiosqlite:///{tmp}/a-file/store.db", "is not a writable directory"),
        ("sqlite+aiosqlite:///{tmp}", "is a directory: name a database file in it"),
    ],
)
def test_config_check_says_why_the_store_url_cannot_be_used(
    tmp_path: Path, url: str, problem: str
) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    config = _store_config(tmp_path, url.format(tmp=tmp_path))
    before = _tree(tmp_path)
    result = _run(tmp_path, "--config", str(config), env={TOKEN_ENV: "t" * 32})
    assert result.returncode == 2
    summary, *lines = result.stderr.splitlines()
    assert summary == f"{config}: 1 problem; each says what to change:"
    assert len(lines) == 1 and problem in lines[0], result.stderr
    assert _tree(tmp_path) == before


def test_config_check_reaches_the_backends_store(backend: Backend, tmp_path: Path) -> None:
    config = _store_config(tmp_path, backend.url)
    result = _run(tmp_path, "--config", str(config), env={TOKEN_ENV: "t" * 32})
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == f"config ok: {config}, store reachable"


@pytest.mark.parametrize(
    "name", ["*Alice*", "a_b", "x<at id=all></at>", "[link](x)", "line\nbreak", "", "x" * 65]
)
def test_a_display_name_that_could_format_a_card_is_a_problem_naming_it(name: str) -> None:
    data = {"people": {"ou_alice": "Alice", "ou_bob": name}}
    settings, found = check_data(data, {})
    assert settings is None
    [problem] = [p for p in found if p.field.startswith("people")]
    assert problem.field == "people.ou_bob" and problem.fix
    assert name not in problem.reason or not name  # the value itself is not echoed


def test_plain_display_names_in_any_script_are_fine() -> None:
    names = {"ou_alice": "Alice", "ou_bob": "Anne-Marie O'Brien", "ou_carol": "李雷 (ops)"}
    settings, found = check_data({"people": names}, {})
    assert not [p for p in found if p.field.startswith("people")]
    assert settings is not None and settings.people == names


def test_the_dev_profile_runs_each_kind_on_the_table_its_domain_gives() -> None:
    """The profile names no domain: a kind registered with a dev table is in it, on that
    table; a kind without one (a service of yours to call) runs on its defaults."""
    from collections.abc import Mapping

    from tests.support.toy_domain import KIND, ToyDomain, ToySettings
    from workers.domains import registered

    class DevToy(ToyDomain):
        def dev_table(self, chats: Mapping[str, str], data_dir: Path) -> dict[str, object]:
            return {"lamps": ["desk", f"hall-{len(chats)}"]}

    with registered(DevToy()):
        dev = dev_settings(Path("var/dev"))
        toy = dev.domains.for_kind(KIND)
        assert isinstance(toy, ToySettings) and toy.lamps == ["desk", "hall-2"]
        given = {p.config_table for p in DOMAINS.values() if p.dev_table(DEV_CHATS, Path())}
        assert given >= {"finance", "message", "toy"}
        for plugin in DOMAINS.values():  # the others run on their defaults: nothing to call
            if plugin.config_table not in given:
                defaults = plugin.settings_model()
                assert dev.domains.for_kind(plugin.kind) == defaults, plugin.kind
