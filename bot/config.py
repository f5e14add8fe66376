"""Configuration: a TOML file validated by pydantic; secrets only from environment variables.

`check(settings, environ)` is pure and returns every problem at once, each as
`field: reason: fix`, so `countersign config check` can list them all.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from pathlib import Path
from typing import Annotated, Any, Literal, Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    IPvAnyNetwork,
    SecretStr,
    StringConstraints,
    ValidationError,
    model_validator,
)

from bot.validation import problems_from
from store.problems import FieldProblem, ProblemsFound
from workers.domains import DOMAINS
from workers.domains.finance.settings import FinanceSettings
from workers.domains.message.settings import MessageSettings

DEFAULT_STORE_URL = "sqlite+aiosqlite:///./var/countersign.db"
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Z_][A-Z0-9_]{0,127}$")]
ChatId = Annotated[str, StringConstraints(pattern=r"^oc_[A-Za-z0-9_-]{1,120}$")]
OpenId = Annotated[str, StringConstraints(pattern=r"^ou_[A-Za-z0-9_-]{1,120}$")]
Name = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")]
HostName = Annotated[str, StringConstraints(pattern=r"^(\*|[A-Za-z0-9]([A-Za-z0-9.-]{0,252}))$")]
ANY = "*"


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StoreSettings(Section):
    url: str = DEFAULT_STORE_URL
    schema_name: str | None = Field(
        default=None, alias="schema", pattern=r"^[a-z_][a-z0-9_]{0,62}$"
    )
    pool_size: int = Field(default=10, ge=1, le=200)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class HttpSettings(Section):
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    max_body_bytes: int = Field(default=65536, ge=1024, le=1048576)
    max_payload_bytes: int = Field(default=16384, ge=256, le=262144)
    proposer_rate_per_s: float = Field(default=20.0, gt=0)
    proposer_burst: int = Field(default=40, ge=1)
    # requests with a missing or unknown token, per peer address (IPv6: per /64)
    unauthenticated_rate_per_s: float = Field(default=1.0, gt=0)
    unauthenticated_burst: int = Field(default=20, ge=1)
    # /ops answers loopback clients; others need the token in this environment variable
    dashboard_token_env: EnvName | None = None
    # names /ops, /readyz and /metrics answer to, besides localhost, the bind host and any
    # address literal (DNS-rebinding protection); "*" answers any
    allowed_hosts: list[HostName] = Field(default_factory=list)
    # a request carrying proxy headers (X-Forwarded-For, Forwarded, ...) from loopback is
    # a loopback client only if the operator says the proxy on this host may be trusted
    trust_loopback_proxy: bool = False


class LarkSettings(Section):
    mode: Literal["ws", "webhook", "off"] = "off"
    app_id: str = ""
    app_secret_env: EnvName = "COUNTERSIGN_LARK_APP_SECRET"
    tenant_keys: list[str] = Field(default_factory=list)
    encrypt_key_env: EnvName = "COUNTERSIGN_LARK_ENCRYPT_KEY"
    verification_token_env: EnvName = "COUNTERSIGN_LARK_VERIFICATION_TOKEN"
    base_url: str = "https://open.larksuite.com"
    # group messages must mention this bot (its open_id); empty: any mention counts
    bot_open_id: str = ""
    watchdog_grace_s: float = Field(default=10.0, gt=0, le=600)
    exit_after_s: float = Field(default=120.0, gt=0, le=86400)
    webhook_window_s: int = Field(default=300, ge=10, le=3600)
    # how long a click waits for its decision before it is answered "processing" (the card
    # then follows as a patch); a click not yet on record by 2.5 s is answered "busy", inside
    # the transports' 2.7 s
    answer_budget_s: float = Field(default=2.0, gt=0, le=2.2)


class CardSettings(Section):
    lang: Literal["en", "zh"] = "en"
    timezone: str = "UTC"
    # how often the card worker looks for due cards when nothing woke it (a failed send or
    # patch is retried on this look)
    poll_s: float = Field(default=1.0, gt=0, le=3600)


class AudienceSettings(Section):
    name: Name
    chat_id: ChatId
    operators: list[OpenId] = Field(min_length=1)
    allow_self_approval: bool = False


class ProposerSettings(Section):
    name: Name
    token_env: EnvName
    kinds: list[str] = Field(default_factory=lambda: [ANY])
    audiences: list[str] = Field(default_factory=lambda: [ANY])
    # result webhooks: secret name (a proposal's source.callback.secret_ref) -> env var
    callback_secret_env: dict[Name, EnvName] = Field(default_factory=dict)
    # chats a proposal's source.conversation may name (result replies go there); unset: the
    # chats of the audiences this proposer may address. A message destination's chat never.
    reply_chats: list[ChatId] | None = None

    def may_propose(self, kind: str) -> bool:
        return ANY in self.kinds or kind in self.kinds

    def may_address(self, audience: str) -> bool:
        return ANY in self.audiences or audience in self.audiences


class DomainSettings(Section):
    finance: FinanceSettings = Field(default_factory=FinanceSettings)
    message: MessageSettings = Field(default_factory=MessageSettings)

    def for_kind(self, kind: str) -> FinanceSettings | MessageSettings:
        if kind == "finance.order":
            return self.finance
        if kind == "message.send":
            return self.message
        raise KeyError(kind)


class OperationSettings(Section):
    default_expires_in_s: int = Field(default=900, ge=30, le=604800)
    max_expires_in_s: int = Field(default=86400, ge=30, le=604800)
    expiry_sweep_s: float = Field(default=1.0, gt=0, le=60)


class ExecutionSettings(Section):
    # concurrent operations the executor works on at once (per process)
    concurrency: int = Field(default=4, ge=1, le=256)
    # the safety-net look of the executor and result deliveries when nothing woke them (a
    # claim, an outcome, a row's own due time and, on PostgreSQL, another replica's notice do)
    poll_s: float = Field(default=5.0, gt=0, le=3600)
    # a submission not answered within this many seconds is `unknown` and reconciled
    submit_timeout_s: float = Field(default=10.0, gt=0, le=120)
    # a client id the venue still does not know this long after dispatch was never received
    not_found_after_s: float = Field(default=60.0, ge=1, le=3600)
    # longest pause between two looks at a working order (resting, protective) or an unknown
    track_max_s: float = Field(default=30.0, ge=1, le=3600)
    # how often the simulated venue's matching runs (resting orders fill as the mark moves)
    venue_tick_s: float = Field(default=1.0, gt=0, le=60)
    # where `run` runs the workers (executor, cards, deliveries, expiry, venue clock):
    # "process" (the default), a supervised second process, so a burst of executions never
    # delays the answers to clicks (both are CPU-bound Python and would share one core); or
    # "inline" in the bot's own interpreter (one process, for tests and tiny hosts)
    workers: Literal["inline", "process"] = "process"

    @model_validator(mode="after")
    def _timeouts_nest(self) -> Self:
        if self.not_found_after_s <= self.submit_timeout_s:
            raise ValueError(
                "not_found_after_s must be greater than submit_timeout_s: a submission still "
                "in flight must never be taken for one the venue never received"
            )
        return self


class DeliverySettings(Section):
    # attempts per conclusion (reply, webhook) before it is `failed` and waits for an operator
    max_attempts: int = Field(default=6, ge=1, le=50)
    # the first retry's delay; each next one doubles, up to max_backoff_s
    first_retry_s: float = Field(default=1.0, gt=0, le=600)
    max_backoff_s: float = Field(default=300.0, gt=0, le=86400)
    # one webhook request's time limit
    timeout_s: float = Field(default=10.0, gt=0, le=120)
    # networks (CIDR) a result webhook may reach although they are internal (loopback, private,
    # link-local, ...); empty: only globally routable addresses. The dev profile allows loopback.
    allow_internal_targets: list[IPvAnyNetwork] = Field(default_factory=list)


class Settings(Section):
    store: StoreSettings = Field(default_factory=StoreSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    lark: LarkSettings = Field(default_factory=LarkSettings)
    audiences: list[AudienceSettings] = Field(default_factory=list)
    proposers: list[ProposerSettings] = Field(default_factory=list)
    domains: DomainSettings = Field(default_factory=DomainSettings)
    operations: OperationSettings = Field(default_factory=OperationSettings)
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings)
    deliveries: DeliverySettings = Field(default_factory=DeliverySettings)
    cards: CardSettings = Field(default_factory=CardSettings)

    def audience(self, name: str) -> AudienceSettings | None:
        return next((a for a in self.audiences if a.name == name), None)

    def destination_chats(self) -> dict[str, str]:
        """Counterparty chats (chat id -> destination name): nothing internal goes there."""
        return {d.chat_id: d.name for d in self.domains.message.destinations}

    def reply_chats(self, proposer: ProposerSettings) -> list[str]:
        """The chats `proposer` may have a result replied into, sorted."""
        if proposer.reply_chats is not None:
            chats = set(proposer.reply_chats)
        else:
            chats = {a.chat_id for a in self.audiences if proposer.may_address(a.name)}
        return sorted(chats - set(self.destination_chats()))


@dataclass(frozen=True)
class Proposer:
    settings: ProposerSettings
    token: SecretStr
    callback_secrets: Mapping[str, SecretStr] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.settings.name


@dataclass(frozen=True)
class LarkSecrets:
    app_secret: SecretStr
    encrypt_key: SecretStr
    verification_token: SecretStr


@dataclass(frozen=True)
class Config:
    """Validated settings plus the secrets resolved from the environment."""

    settings: Settings
    proposers: tuple[Proposer, ...]
    lark: LarkSecrets = LarkSecrets(SecretStr(""), SecretStr(""), SecretStr(""))
    dashboard_token: SecretStr = field(default_factory=lambda: SecretStr(""))

    def secret_values(self) -> list[str]:
        """Every secret this process holds, for scrubbing logs."""
        values = [p.token.get_secret_value() for p in self.proposers]
        values += [
            s.get_secret_value() for p in self.proposers for s in p.callback_secrets.values()
        ]
        values += [
            self.lark.app_secret.get_secret_value(),
            self.lark.encrypt_key.get_secret_value(),
            self.lark.verification_token.get_secret_value(),
            self.dashboard_token.get_secret_value(),
        ]
        return [value for value in values if value]

    def callback_secret(self, proposer: str, ref: str) -> str | None:
        for each in self.proposers:
            if each.name == proposer and ref in each.callback_secrets:
                return each.callback_secrets[ref].get_secret_value()
        return None


def parse(data: Mapping[str, Any]) -> Settings:
    try:
        return Settings.model_validate(data)
    except ValidationError as error:
        raise ProblemsFound(problems_from(error), code="invalid_config") from None


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


def _duplicates(names: list[str]) -> set[str]:
    return {name for name in names if names.count(name) > 1}


def check(settings: Settings, environ: Mapping[str, str]) -> list[FieldProblem]:
    """Cross-field and environment problems that pydantic cannot see on its own."""
    problems: list[FieldProblem] = []
    audience_names = [a.name for a in settings.audiences]
    for name in sorted(_duplicates(audience_names)):
        problems.append(FieldProblem("audiences", f"name {name!r} is used twice", "rename one"))
    for name in sorted(_duplicates([p.name for p in settings.proposers])):
        problems.append(FieldProblem("proposers", f"name {name!r} is used twice", "rename one"))
    if not settings.proposers:
        problems.append(
            FieldProblem("proposers", "no proposer is configured", "add a [[proposers]] entry")
        )
    tokens: dict[str, str] = {}
    for index, proposer in enumerate(settings.proposers):
        where = f"proposers[{index}]"
        token = environ.get(proposer.token_env, "")
        if not token:
            problems.append(
                FieldProblem(
                    f"{where}.token_env",
                    f"environment variable {proposer.token_env} is not set",
                    f"export {proposer.token_env}=<a long random token>",
                )
            )
        elif len(token) < 8:
            problems.append(
                FieldProblem(
                    f"{where}.token_env",
                    f"the token in {proposer.token_env} is shorter than 8 characters",
                    "use a long random token (e.g. `openssl rand -hex 32`)",
                )
            )
        elif token in tokens:
            problems.append(
                FieldProblem(
                    f"{where}.token_env",
                    f"shares its token with proposer {tokens[token]!r}",
                    "give every proposer its own token",
                )
            )
        else:
            tokens[token] = proposer.name
        for secret_name, env_name in proposer.callback_secret_env.items():
            secret = environ.get(env_name, "")
            if len(secret) < 16:
                problems.append(
                    FieldProblem(
                        f"{where}.callback_secret_env.{secret_name}",
                        f"environment variable {env_name} is "
                        + ("not set" if not secret else "shorter than 16 characters"),
                        f"export {env_name}=<a long random secret shared with the receiver>",
                    )
                )
        for kind in proposer.kinds:
            if kind != ANY and kind not in DOMAINS:
                problems.append(
                    FieldProblem(
                        f"{where}.kinds",
                        f"unknown kind {kind!r}",
                        f'use {", ".join(sorted(DOMAINS))} or "*"',
                    )
                )
        destination_chats = settings.destination_chats()
        for chat in proposer.reply_chats or []:
            if chat in destination_chats:
                problems.append(
                    FieldProblem(
                        f"{where}.reply_chats",
                        f"{chat} is the chat of message destination "
                        f"{destination_chats[chat]!r}: the counterparty would read the replies",
                        "remove it; name internal chats only",
                    )
                )
        for audience in proposer.audiences:
            if audience != ANY and audience not in audience_names:
                problems.append(
                    FieldProblem(
                        f"{where}.audiences",
                        f"no audience named {audience!r}",
                        "add it under [[audiences]] or remove it here",
                    )
                )
    finance = settings.domains.finance
    for name in sorted(_duplicates([a.name for a in finance.accounts])):
        problems.append(
            FieldProblem("domains.finance.accounts", f"account {name!r} twice", "rename one")
        )
    message = settings.domains.message
    for name in sorted(_duplicates([d.name for d in message.destinations])):
        problems.append(
            FieldProblem(
                "domains.message.destinations", f"destination {name!r} twice", "rename one"
            )
        )
    # Cards (terms, who decided) and filing receipts are internal: never a counterparty's chat.
    counterparty_chats = settings.destination_chats()
    internal_chats = [
        (f"audiences[{i}].chat_id", a.chat_id, "every card, its terms and who decided")
        for i, a in enumerate(settings.audiences)
    ] + [
        (f"domains.message.destinations[{i}].ops_chat_id", d.ops_chat_id, "filing receipts")
        for i, d in enumerate(message.destinations)
    ]
    for field_path, chat, what in internal_chats:
        if chat in counterparty_chats:
            problems.append(
                FieldProblem(
                    field_path,
                    f"{chat} is the chat of message destination {counterparty_chats[chat]!r}: "
                    f"the counterparty would see {what}",
                    "name an internal chat of its own",
                )
            )
    ops = settings.operations
    if ops.default_expires_in_s > ops.max_expires_in_s:
        problems.append(
            FieldProblem(
                "operations.default_expires_in_s",
                "is larger than operations.max_expires_in_s",
                "lower it or raise the maximum",
            )
        )
    lark = settings.lark
    if lark.mode != "off":
        if not lark.app_id:
            problems.append(
                FieldProblem(
                    "lark.app_id",
                    f"required when lark.mode = {lark.mode!r}",
                    "copy the App ID (cli_...) from the developer console",
                )
            )
        if not lark.tenant_keys:
            problems.append(
                FieldProblem(
                    "lark.tenant_keys",
                    "no tenant is allowed",
                    "add the tenant_key your app is installed in",
                )
            )
        needed = [lark.app_secret_env]
        if lark.mode == "webhook":
            needed += [lark.encrypt_key_env, lark.verification_token_env]
        for env_name in needed:
            if not environ.get(env_name):
                problems.append(
                    FieldProblem(
                        "lark",
                        f"environment variable {env_name} is not set",
                        f"export {env_name} (from the app's Credentials / Events page)",
                    )
                )
    try:
        zone(settings.cards.timezone)
    except ValueError:
        problems.append(
            FieldProblem(
                "cards.timezone",
                f"unknown time zone {settings.cards.timezone!r}",
                'use an IANA name such as "UTC" or "Asia/Shanghai"',
            )
        )
    if settings.store.schema_name and not settings.store.url.startswith("postgresql"):
        problems.append(
            FieldProblem("store.schema", "only applies to PostgreSQL", "remove it for SQLite")
        )
    return problems


def check_data(
    data: Mapping[str, Any], environ: Mapping[str, str]
) -> tuple[Settings | None, list[FieldProblem]]:
    """Validate raw config data and return every problem at once.

    When the schema is broken somewhere, the settings are None and the problems are the
    schema problems followed by what `check` finds in the parts that are valid on their
    own, so one `config check` run lists everything (not just the first kind of problem).
    """
    try:
        settings = parse(data)
    except ProblemsFound as error:
        return None, [*error.problems, *_check_valid_parts(data, environ)]
    return settings, check(settings, environ)


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _check_valid_parts(data: Mapping[str, Any], environ: Mapping[str, str]) -> list[FieldProblem]:
    sections = {
        key: value
        for key, value in data.items()
        if key in Settings.model_fields and key not in ("audiences", "proposers")
    }
    for key in list(sections):
        try:
            Settings.model_validate({key: sections[key]})
        except ValidationError:
            del sections[key]  # already reported; its defaults add no problem of their own
    audiences: list[AudienceSettings] = []
    for item in _items(data.get("audiences")):
        try:
            audiences.append(AudienceSettings.model_validate(item))
        except ValidationError:
            # Keep the name of a broken audience so references to it and duplicates of
            # it are judged as they would be once it is fixed (check reads only names).
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                audiences.append(AudienceSettings.model_construct(**item))
    proposers: list[ProposerSettings] = []
    origin: list[int] = []  # index in the file of each proposer kept
    for index, item in enumerate(_items(data.get("proposers"))):
        try:
            proposers.append(ProposerSettings.model_validate(item))
            origin.append(index)
        except ValidationError:
            pass
    try:
        partial = Settings.model_validate(sections)
    except ValidationError:
        return []
    partial = partial.model_copy(update={"audiences": audiences, "proposers": proposers})
    problems = []
    for problem in check(partial, environ):
        if problem.field == "proposers" and not proposers and _items(data.get("proposers")):
            continue  # there are proposers; they are all broken and already reported
        match = re.match(r"proposers\[(\d+)\]", problem.field)
        if match:
            field = f"proposers[{origin[int(match[1])]}]" + problem.field[match.end() :]
            problem = FieldProblem(field, problem.reason, problem.fix)
        problems.append(problem)
    return problems


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
    return Config(settings, proposers, secrets, dashboard)


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
    return environ


def zone(name: str) -> tzinfo:
    """An IANA time zone for cards; ValueError if unknown."""
    if name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(name) from None


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
    return data


def _redact_url(url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable url>"
