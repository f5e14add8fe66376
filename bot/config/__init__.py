"""Configuration: a TOML file validated by pydantic; secrets only from environment variables.

`settings` is the schema, `checks` the cross-field rules (a tuple of small pure checks, all
run at once so `countersign config check` lists every problem, each as `field: reason: fix`),
`loading` reads a file and resolves secrets, `reachability` asks the store URL's server.
When the schema refuses part of a file, `partial` lets the checks judge the rest without
reporting what would only follow from an invalid value; `validation` words each schema
error (did you mean, the values a choice takes, `pattern_words` for every format).
"""

from bot.config.checks import CHECKS, check, check_data
from bot.config.loading import load, read_file, redacted, resolve, secrets_environ
from bot.config.settings import (
    ANY,
    DEFAULT_STORE_URL,
    AudienceSettings,
    CardSettings,
    Config,
    DeliverySettings,
    DomainSettings,
    ExecutionSettings,
    HttpSettings,
    LarkSecrets,
    LarkSettings,
    OpenId,
    OperationSettings,
    Proposer,
    ProposerSettings,
    Settings,
    StoreSettings,
    WebSettings,
    parse,
    zone,
)

__all__ = [
    "ANY",
    "CHECKS",
    "DEFAULT_STORE_URL",
    "AudienceSettings",
    "CardSettings",
    "Config",
    "DeliverySettings",
    "DomainSettings",
    "ExecutionSettings",
    "HttpSettings",
    "LarkSecrets",
    "LarkSettings",
    "OpenId",
    "OperationSettings",
    "Proposer",
    "ProposerSettings",
    "Settings",
    "StoreSettings",
    "WebSettings",
    "check",
    "check_data",
    "load",
    "parse",
    "read_file",
    "redacted",
    "resolve",
    "secrets_environ",
    "zone",
]
