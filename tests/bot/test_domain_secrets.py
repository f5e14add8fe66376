"""A secret a domain's table names (an agent wallet's key, by environment variable): `config
check` and `run` refuse to start while it is unset, naming the field, the variable and the
fix; once set it is held like the bot's own secrets (scrubbed from logs, handed to a worker
process) and shown only as set or missing, never its value. Written against the domain
contract with the toy lamp (no venue's code)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pytest

from bot.app.workforce import build_workforce
from bot.config import check, parse, resolve, secrets_environ
from bot.config.loading import redacted
from store import Store
from tests.support.toy_domain import ToyDomain, ToySettings
from workers.domains import registered
from workers.domains.base import RunnerContext, SecretEnv
from workers.domains.execution import Runner

KEY_ENV = "COUNTERSIGN_TEST_LAMP_KEY"
KEY = "0x" + "5e" * 32
TOKEN_ENV = "COUNTERSIGN_TOKEN"
TOKEN = "t" * 32


class KeyedLamp(ToyDomain):
    """A lamp whose table names the variable holding its key (one per configured lamp); it
    keeps the environment each runner it opened was given."""

    def __init__(self) -> None:
        super().__init__()
        self.environs: list[Mapping[str, str]] = []

    async def open_runner(self, settings: ToySettings, context: RunnerContext) -> Runner | None:
        self.environs.append(context.environ)
        return await super().open_runner(settings, context)

    def secret_envs(self, settings: ToySettings) -> Sequence[SecretEnv]:
        return [
            SecretEnv(f"lamps[{n}]", KEY_ENV, f"export {KEY_ENV}=<the lamp's key>")
            for n, _lamp in enumerate(settings.lamps[:1])
        ]


@pytest.fixture(autouse=True)
def keyed_lamp() -> Iterator[KeyedLamp]:
    lamp = KeyedLamp()
    with registered(lamp):
        yield lamp


def test_an_unset_domain_secret_is_one_problem_naming_the_field_variable_and_fix() -> None:
    settings = parse(
        {
            "proposers": [{"name": "dev-agent", "token_env": TOKEN_ENV}],
            "domains": {"toy": {"lamps": ["desk"]}},
        }
    )
    problems = check(settings, {TOKEN_ENV: TOKEN})
    assert [(p.field, p.reason, p.fix) for p in problems] == [
        (
            "domains.toy.lamps[0]",
            f"environment variable {KEY_ENV} is not set",
            f"export {KEY_ENV}=<the lamp's key>",
        )
    ]
    assert check(settings, {TOKEN_ENV: TOKEN, KEY_ENV: KEY}) == []
    nothing_named = parse({"proposers": [{"name": "dev-agent", "token_env": TOKEN_ENV}]})
    assert check(nothing_named, {TOKEN_ENV: TOKEN}) == []


def test_a_set_domain_secret_is_held_scrubbed_handed_on_and_shown_only_as_set() -> None:
    settings = parse(
        {
            "proposers": [{"name": "dev-agent", "token_env": TOKEN_ENV}],
            "domains": {"toy": {"lamps": ["desk"]}},
        }
    )
    environ = {TOKEN_ENV: TOKEN, KEY_ENV: KEY}
    config = resolve(settings, environ)

    assert KEY in config.secret_values()  # every log line is scrubbed of it
    assert secrets_environ(config)[KEY_ENV] == KEY  # a worker process resolves it again
    assert resolve(settings, secrets_environ(config)).domain_secrets == config.domain_secrets
    shown = redacted(settings, environ)
    assert shown["domain_secrets"] == {"domains.toy.lamps[0]": "<set, redacted>"}
    assert KEY not in repr(shown) and KEY not in repr(config)
    assert redacted(settings, {TOKEN_ENV: TOKEN})["domain_secrets"] == {
        "domains.toy.lamps[0]": "<missing>"
    }


async def test_the_runners_get_the_secret_resolve_checked_whatever_the_process_environment(
    keyed_lamp: KeyedLamp, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The config was resolved from an environment (a worker process's handoff, a test's)
    that this process's own may lack: the runners are given what was checked."""
    monkeypatch.delenv(KEY_ENV, raising=False)
    settings = parse(
        {
            "proposers": [{"name": "dev-agent", "token_env": TOKEN_ENV}],
            "domains": {"toy": {"lamps": ["desk"]}},
        }
    )
    config = resolve(settings, {TOKEN_ENV: TOKEN, KEY_ENV: KEY})
    force = await build_workforce(config, store, None, clock=store.clock)
    try:
        [environ] = keyed_lamp.environs
        assert environ[KEY_ENV] == KEY
    finally:
        await force.close(0)
