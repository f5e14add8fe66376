"""Configuration schema: the TOML file's sections as pydantic models, and the resolved Config.

Secrets are never in the file: each is named by an environment variable (`*_env`) and read
by `resolve` (bot/config/loading.py). Cross-field problems are bot/config/checks.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import time, tzinfo
from typing import Annotated, Any, Literal, Self

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

from bot.config.domain_settings import DomainSettings as DomainSettings  # re-exported
from bot.config.retention_settings import RetentionSettings as RetentionSettings  # re-exported
from bot.config.validation import DISPLAY_NAME_PATTERN, problems_from
from kernel.display import LOCAL as LOCAL_ZONE
from kernel.display import zone as display_zone
from kernel.problems import FieldProblem, ProblemsFound
from workers.domains import DOMAINS

DEFAULT_STORE_URL = "sqlite+aiosqlite:///./var/countersign.db"
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Z_][A-Z0-9_]{0,127}$")]
ChatId = Annotated[str, StringConstraints(pattern=r"^oc_[A-Za-z0-9_-]{1,120}$")]
OpenId = Annotated[str, StringConstraints(pattern=r"^ou_[A-Za-z0-9_-]{1,120}$")]
Name = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")]
# a person's display name on cards, the dashboard and the CLI: one line of plain text, without
# what could format or mention in a card's markdown line (quorum progress names people there)
DisplayName = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True, min_length=1, max_length=64, pattern=DISPLAY_NAME_PATTERN
    ),
]
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
    # /readyz and /metrics show the store's counts from a summary refreshed this often in
    # the background (bot/api/summary.py); older than summary_stale_after_s, the store
    # counts as stuck (/readyz 503)
    summary_period_s: float = Field(default=5.0, ge=0.05, le=300)
    summary_stale_after_s: float = Field(default=15.0, gt=0, le=3600)

    @model_validator(mode="after")
    def _summary_outlives_its_period(self) -> Self:
        if self.summary_stale_after_s <= self.summary_period_s:
            raise ValueError("summary_stale_after_s must be greater than summary_period_s")
        return self


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
    # then follows as a patch); every later deadline (busy, the transports') follows from it
    # in bot/ingress/ack.py
    answer_budget_s: float = Field(default=2.0, gt=0, le=2.2)


LARK_AUTHORIZE_URL = "https://accounts.feishu.cn/open-apis/authen/v1/authorize"
# https anywhere; plain http only on this machine (dev), where nothing crosses a network
PUBLIC_URL = r"^(https://[A-Za-z0-9.-]+|http://(127\.0\.0\.1|localhost|\[::1\]))(:[0-9]{1,5})?$"


class WebSettings(Section):
    """Sign in with Lark on the dashboard (bot/api/signin.py)."""

    # where browsers reach the bot; the redirect URI is public_url + "/ops/auth/callback"
    public_url: Annotated[str, StringConstraints(pattern=PUBLIC_URL)] | None = None
    sign_in: bool = False
    # a session unused this long, or older than session_max_s, must sign in again
    session_idle_s: int = Field(default=1800, ge=60, le=86400)
    session_max_s: int = Field(default=43200, ge=300, le=2592000)
    lark_authorize_url: Annotated[str, StringConstraints(pattern=r"^https?://[^\s?#]+$")] = (
        LARK_AUTHORIZE_URL
    )
    # a web Confirm of an operation whose worst-case notional is above this amount (in
    # reauth_currency; a notional unknown or in another currency counts as above) needs a
    # sign-in younger than reauth_within_s (bot/api/web_decide.py); None: never asked
    reauth_above: (
        Annotated[str, StringConstraints(pattern=r"^[0-9]{1,15}(\.[0-9]{1,8})?$")] | None
    ) = None
    reauth_currency: Annotated[str, StringConstraints(pattern=r"^[A-Z0-9]{2,12}$")] = "USDC"
    reauth_within_s: int = Field(default=300, ge=30, le=86400)

    @model_validator(mode="after")
    def _lifetimes_nest(self) -> Self:
        if self.session_idle_s > self.session_max_s:
            raise ValueError("session_idle_s must not be greater than session_max_s")
        return self

    @property
    def redirect_uri(self) -> str:
        return f"{self.public_url}/ops/auth/callback"


class CardSettings(Section):
    lang: Literal["en", "zh"] = "en"
    # the one display zone of every surface (cards, dashboard, CLI, chat replies):
    # "local" is the server's own zone (kernel/display.py)
    timezone: str = LOCAL_ZONE
    # how often the card worker looks for due cards when nothing woke it (a failed send or
    # patch is retried on this look)
    poll_s: float = Field(default=1.0, gt=0, le=3600)


class ApprovalRule(Section):
    """Raises what an operation needs, by audience, kind and notional. Of the rules that
    match an operation, the one with the highest `above` applies, wholly (ties: the first
    listed); bot/config/policy.py reads them."""

    name: Name
    # the audiences it applies to (default: every audience)
    audiences: list[str] = Field(default_factory=lambda: [ANY])
    # the kinds it applies to (default: every kind)
    kinds: list[str] = Field(default_factory=lambda: [ANY])
    # applies when the operation's worst-case notional is above this, in `currency`; an
    # operation whose notional cannot be computed counts as above every amount (fail closed)
    above: Annotated[str, StringConstraints(pattern=r"^[0-9]{1,15}(\.[0-9]{1,8})?$")] | None = None
    currency: Annotated[str, StringConstraints(pattern=r"^[A-Z0-9]{2,12}$")] | None = None
    # distinct operators who must confirm (default: the audience's own number)
    required_confirmations: int | None = Field(default=None, ge=1, le=10)
    # only these may confirm (default: the audience's operators); a Reject stays open to all
    operators: list[OpenId] | None = None

    def applies_to(self, audience: str, kind: str) -> bool:
        return (ANY in self.audiences or audience in self.audiences) and (
            ANY in self.kinds or kind in self.kinds
        )


class AudienceSettings(Section):
    name: Name
    chat_id: ChatId
    operators: list[OpenId] = Field(min_length=1)
    allow_self_approval: bool = False
    # distinct operators who must confirm an operation before it is claimed (N of M)
    required_confirmations: int = Field(default=1, ge=1, le=10)
    # this long before an undecided operation expires, one reply in its card's thread
    # mentions the operators who may still act (None: no reminder)
    remind_before_s: int | None = Field(default=None, ge=30, le=604800)
    # another audience: at the reminder, a copy of the card goes to its chat, and its
    # operators may decide like this audience's own (they are bound in when filed)
    escalate_to: Name | None = None
    # an operator may hand their right here to another person for at most this many days
    # (from the dashboard, by a text command in the audience's chat, or by an admin with
    # `countersign delegate`); None (the default): no delegation in this audience
    delegation_max_days: int | None = Field(default=None, ge=1, le=90)


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
    # executor passes over one operation that may raise in a row (each followed by a longer
    # pause) before it is concluded: unresolved if nothing was sent, else reconciled
    max_failed_passes: int = Field(default=5, ge=1, le=100)
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


class AuditSettings(Section):
    # the audit chain's head is posted into every audience's chat each day at this time, in
    # the cards' time zone (workers/audit_witness.py); `countersign audit witness` posts now
    witness: bool = True
    witness_at: Annotated[str, StringConstraints(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$")] = (
        "09:00"
    )
    # seconds between the witness's looks at the clock (a failed post is tried again then)
    poll_s: float = Field(default=30.0, gt=0, le=3600)

    @property
    def witness_time(self) -> time:
        hours, minutes = self.witness_at.split(":")
        return time(int(hours), int(minutes))


class Settings(Section):
    store: StoreSettings = Field(default_factory=StoreSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    lark: LarkSettings = Field(default_factory=LarkSettings)
    audiences: list[AudienceSettings] = Field(default_factory=list)
    approval_rules: list[ApprovalRule] = Field(default_factory=list)
    proposers: list[ProposerSettings] = Field(default_factory=list)
    domains: DomainSettings = Field(default_factory=DomainSettings)
    operations: OperationSettings = Field(default_factory=OperationSettings)
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings)
    deliveries: DeliverySettings = Field(default_factory=DeliverySettings)
    cards: CardSettings = Field(default_factory=CardSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    # open id -> the name people know them by; anyone not listed is shown by their id
    people: dict[OpenId, DisplayName] = Field(default_factory=dict)

    def audience(self, name: str) -> AudienceSettings | None:
        return next((a for a in self.audiences if a.name == name), None)

    def outside_chats(self) -> dict[str, str]:
        """Chats outsiders read, of every domain (chat id -> who, e.g. a message destination):
        nothing internal goes there."""
        chats: dict[str, str] = {}
        for plugin in DOMAINS.values():
            chats.update(plugin.outside_chats(self.domains.for_kind(plugin.kind)))
        return chats

    def witness_chats(self) -> list[str]:
        """Where the audit chain's head is witnessed: every audience's chat, sorted."""
        return sorted({a.chat_id for a in self.audiences} - set(self.outside_chats()))

    def reply_chats(self, proposer: ProposerSettings) -> list[str]:
        """The chats `proposer` may have a result replied into, sorted."""
        if proposer.reply_chats is not None:
            chats = set(proposer.reply_chats)
        else:
            chats = {a.chat_id for a in self.audiences if proposer.may_address(a.name)}
        return sorted(chats - set(self.outside_chats()))


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
    # the secrets domains' tables name (an agent wallet's key), by environment variable
    domain_secrets: Mapping[str, SecretStr] = field(default_factory=dict)

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
        values += [secret.get_secret_value() for secret in self.domain_secrets.values()]
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
        raise ProblemsFound(schema_problems(error), code="invalid_config") from None


def schema_problems(error: ValidationError) -> list[FieldProblem]:
    """The schema's problems with a config file (an unknown key told its closest known one)."""
    return problems_from(error, model=Settings)


def zone(name: str) -> tzinfo:
    """The display zone [cards] timezone names ("local", "UTC" or IANA); ValueError if unknown."""
    return display_zone(name)
