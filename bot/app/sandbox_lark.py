"""`countersign run --sandbox --config FILE`: your own config run against the built-in
sandbox. The sandbox's app stands in for the Lark app [lark] names: its app id, tenant, base
URL and secrets are filled in (the secrets into the environment variables [lark] names, never
the file); the rest of the config (store, audiences, proposers, domains, people) is yours.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from bot.app.devstack import SandboxApp
from bot.config import Config, resolve
from bot.config.settings import Settings


def with_sandbox_lark(
    settings: Settings, sandbox: SandboxApp, mode: Literal["ws", "webhook"]
) -> tuple[Settings, dict[str, str]]:
    """`settings` with the sandbox as their Lark, and the secrets its [lark] env names get."""
    lark = settings.lark.model_copy(
        update={
            "mode": mode,
            "app_id": sandbox.app_id,
            "tenant_keys": [sandbox.tenant_key],
            "base_url": sandbox.base_url,
            # a real app's bot id means nothing here: any mention of the bot counts
            "bot_open_id": "",
        }
    )
    web = settings.web
    if web.sign_in:  # signing in goes through the sandbox's authorize page
        authorize = f"{sandbox.base_url}/open-apis/authen/v1/authorize"
        web = web.model_copy(update={"lark_authorize_url": authorize})
    secrets = {
        lark.app_secret_env: sandbox.app_secret,
        lark.encrypt_key_env: sandbox.encrypt_key,
        lark.verification_token_env: sandbox.verification_token,
    }
    return settings.model_copy(update={"lark": lark, "web": web}), secrets


def own_config_on_sandbox(
    settings: Settings,
    sandbox: SandboxApp,
    mode: Literal["ws", "webhook"],
    environ: Mapping[str, str],
) -> Config:
    """The config resolved as `run` resolves it, with the sandbox's [lark] and secrets."""
    settings, secrets = with_sandbox_lark(settings, sandbox, mode)
    return resolve(settings, {**environ, **secrets})
