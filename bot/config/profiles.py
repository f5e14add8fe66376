"""Built-in profiles. `dev`: Lark off, SQLite under a data dir, the names the sandbox uses."""

from __future__ import annotations

from pathlib import Path

from bot.config import Config, Settings, parse, resolve
from workers.domains import DOMAINS

DEV_TOKEN_ENV = "COUNTERSIGN_TOKEN"  # the name the CLI client reads too: one name everywhere
DEV_TOKEN = "dev-token"
# One dev directory for the demo, `run --dev`/`--sandbox` and the operator tools' `--dev`,
# so `countersign venue orders` after `make run` reads the demo's data.
DEFAULT_DEV_DIR = Path("var/dev")
DEV_CALLBACK_SECRET_ENV = "COUNTERSIGN_DEV_CALLBACK_SECRET"
DEV_CALLBACK_SECRET = "dev-callback-secret"  # public by design, like the dev token
# the sandbox's chats by role (larksandbox/entities.py), as domains' dev tables name them
DEV_CHATS = {"ops": "oc_ops", "counterparty": "oc_acme"}


def dev_settings(data_dir: Path, port: int = 8080, host: str = "127.0.0.1") -> Settings:
    return parse(
        {
            "store": {"url": f"sqlite+aiosqlite:///{(data_dir / 'countersign.db').resolve()}"},
            "http": {"host": host, "port": port},
            "lark": {"mode": "off"},
            "audiences": [
                {
                    "name": "ops",
                    "chat_id": "oc_ops",
                    "operators": ["ou_alice", "ou_bob", "ou_carol"],
                }
            ],
            # the sandbox's people (larksandbox/entities.py), by the names its UI shows
            "people": {"ou_alice": "Alice", "ou_bob": "Bob", "ou_carol": "Carol"},
            "proposers": [
                {
                    "name": "dev-agent",
                    "token_env": DEV_TOKEN_ENV,
                    "kinds": ["*"],
                    "audiences": ["*"],
                    "callback_secret_env": {"dev": DEV_CALLBACK_SECRET_ENV},
                }
            ],
            # each kind as its domain runs it here (a kind with nothing to run locally,
            # e.g. a call to a service of yours, is left out)
            "domains": {
                plugin.config_table: dict(table)
                for plugin in DOMAINS.values()
                if (table := plugin.dev_table(DEV_CHATS, data_dir)) is not None
            },
            # result webhooks to receivers on this machine (the sandbox, a local agent) only
            "deliveries": {"allow_internal_targets": ["127.0.0.0/8", "::1/128"]},
        }
    )


DEV_ENVIRON = {DEV_TOKEN_ENV: DEV_TOKEN, DEV_CALLBACK_SECRET_ENV: DEV_CALLBACK_SECRET}


def dev_config(data_dir: Path, port: int = 8080, host: str = "127.0.0.1") -> Config:
    # The dev token is public by design: it only ever guards a local sandbox profile.
    return resolve(dev_settings(data_dir, port, host), DEV_ENVIRON)
