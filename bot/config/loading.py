"""Reading a config file and resolving it: TOML in, validated settings plus secrets out."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from bot.config.checks import check
from bot.config.settings import Config, LarkSecrets, Proposer, Settings, parse
from kernel.problems import FieldProblem, ProblemsFound
from workers.domains import DOMAINS
from workers.domains.base import SecretEnv


def load(path: Path) -> dict[str, Any]:
    """The TOML data of a config file, not yet validated."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProblemsFound(
            [FieldProblem("--config", f"{path} does not exist", "pass an existing TOML file")]
        ) from None
    except IsADirectoryError:
        raise ProblemsFound(
            [FieldProblem("--config", f"{path} is a directory", "pass the TOML file inside it")]
        ) from None
    except (PermissionError, UnicodeDecodeError) as error:
        reason = "is not readable" if isinstance(error, PermissionError) else "is not UTF-8 text"
        raise ProblemsFound(
            [FieldProblem("--config", f"{path} {reason}", "pass a readable UTF-8 TOML file")]
        ) from None
    except tomllib.TOMLDecodeError as error:
        raise ProblemsFound(
            [FieldProblem(str(path), f"not valid TOML ({error})", "fix the syntax")]
        ) from None


def read_file(path: Path) -> Settings:
    return parse(load(path))


def resolve(settings: Settings, environ: Mapping[str, str]) -> Config:
    problems = check(settings, environ)
    if problems:
        raise ProblemsFound(problems, code="invalid_config")
    proposers = tuple(
        Proposer(
            p,
            SecretStr(environ[p.token_env]),
            {name: SecretStr(environ[env]) for name, env in p.callback_secret_env.items()},
        )
        for p in settings.proposers
    )
    lark = settings.lark
    secrets = LarkSecrets(
        SecretStr(environ.get(lark.app_secret_env, "")),
        SecretStr(environ.get(lark.encrypt_key_env, "")),
        SecretStr(environ.get(lark.verification_token_env, "")),
    )
    dashboard_env = settings.http.dashboard_token_env
    dashboard = SecretStr(environ.get(dashboard_env, "") if dashboard_env else "")
    return Config(settings, proposers, secrets, dashboard, _domain_secrets(settings, environ))


def _named_secrets(settings: Settings) -> list[tuple[str, SecretEnv]]:
    """(where, secret) for each secret a domain's table names."""
    return [
        (f"domains.{plugin.config_table}.{secret.field}", secret)
        for plugin in DOMAINS.values()
        for secret in plugin.secret_envs(settings.domains.for_kind(plugin.kind))
    ]


def _domain_secrets(settings: Settings, environ: Mapping[str, str]) -> dict[str, SecretStr]:
    return {
        secret.name: SecretStr(environ[secret.name])
        for _where, secret in _named_secrets(settings)
        if environ.get(secret.name)  # `check` refused an unset one before this
    }


def secrets_environ(config: Config) -> dict[str, str]:
    """The environment `resolve` would need to rebuild `config`: each secret under the name
    the settings give it (for a worker process handed its config through a pipe)."""
    settings = config.settings
    environ: dict[str, str] = {}
    for proposer in config.proposers:
        environ[proposer.settings.token_env] = proposer.token.get_secret_value()
        for name, env in proposer.settings.callback_secret_env.items():
            environ[env] = proposer.callback_secrets[name].get_secret_value()
    lark = settings.lark
    environ[lark.app_secret_env] = config.lark.app_secret.get_secret_value()
    environ[lark.encrypt_key_env] = config.lark.encrypt_key.get_secret_value()
    environ[lark.verification_token_env] = config.lark.verification_token.get_secret_value()
    if settings.http.dashboard_token_env:
        environ[settings.http.dashboard_token_env] = config.dashboard_token.get_secret_value()
    for name, secret in config.domain_secrets.items():
        environ[name] = secret.get_secret_value()
    return environ


def redacted(settings: Settings, environ: Mapping[str, str]) -> dict[str, Any]:
    """The effective configuration for display; secrets shown only as set/missing."""
    data = settings.model_dump(mode="json", by_alias=True)
    for proposer in data["proposers"]:
        proposer["token"] = "<set, redacted>" if environ.get(proposer["token_env"]) else "<missing>"
    lark = data["lark"]
    for key in ("app_secret_env", "encrypt_key_env", "verification_token_env"):
        lark[key.removesuffix("_env")] = (
            "<set, redacted>" if environ.get(lark[key]) else "<missing>"
        )
    data["store"]["url"] = _redact_url(settings.store.url)
    # a domain's secrets (an agent wallet's key), by where its table names them
    data["domain_secrets"] = {
        where: "<set, redacted>" if environ.get(secret.name) else "<missing>"
        for where, secret in _named_secrets(settings)
    }
    return data


def _redact_url(url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable url>"
