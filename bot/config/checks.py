"""Cross-field and environment checks that pydantic cannot see on its own.

`CHECKS` is a tuple of small pure functions, each `(settings, environ) -> problems`; `check`
runs them all, so `countersign config check` lists every problem in one pass, each as
`field: reason: fix`. Adding a rule is adding a function to the tuple.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from bot.config.partial import InvalidRead, partial_settings
from bot.config.policy_checks import approval_policy
from bot.config.policy_checks import duplicates as _duplicates
from bot.config.settings import ANY, Settings, schema_problems, zone
from kernel.problems import FieldProblem
from workers.domains import DOMAINS

Environ = Mapping[str, str]
Check = Callable[[Settings, Environ], Iterator[FieldProblem]]


def unique_names(settings: Settings, environ: Environ) -> Iterator[FieldProblem]:
    for name in sorted(_duplicates([a.name for a in settings.audiences])):
        yield FieldProblem("audiences", f"name {name!r} is used twice", "rename one")
    for name in sorted(_duplicates([p.name for p in settings.proposers])):
        yield FieldProblem("proposers", f"name {name!r} is used twice", "rename one")


def domain_tables(settings: Settings, environ: Environ) -> Iterator[FieldProblem]:
    """What each domain finds wrong in its own table (names twice, a file that does not
    read), reported under `domains.<table>`."""
    for plugin in DOMAINS.values():
        for problem in plugin.config_problems(settings.domains.for_kind(plugin.kind)):
            yield _in_table(plugin.config_table, problem)


def domain_secrets(settings: Settings, environ: Environ) -> Iterator[FieldProblem]:
    """Each secret a domain's table names (an agent wallet's key) is set; never its value."""
    for plugin in DOMAINS.values():
        for secret in plugin.secret_envs(settings.domains.for_kind(plugin.kind)):
            if not environ.get(secret.name):
                yield FieldProblem(
                    f"domains.{plugin.config_table}.{secret.field}",
                    f"environment variable {secret.name} is not set",
                    secret.fix,
                )


def _in_table(table: str, problem: FieldProblem) -> FieldProblem:
    return FieldProblem(f"domains.{table}.{problem.field}", problem.reason, problem.fix)


def some_proposer(settings: Settings, environ: Environ) -> Iterator[FieldProblem]:
    if not settings.proposers:
        yield FieldProblem("proposers", "no proposer is configured", "add a [[proposers]] entry")


def proposer_tokens(settings: Settings, environ: Environ) -> Iterator[FieldProblem]:
    """Each proposer's token is set, long enough and its own."""
    owners: dict[str, str] = {}
    for index, proposer in enumerate(settings.proposers):
        where = f"proposers[{index}].token_env"
        token = environ.get(proposer.token_env, "")
        if not token:
            yield FieldProblem(
                where,
                f"environment variable {proposer.token_env} is not set",
                f"export {proposer.token_env}=<a long random token>",
            )
        elif len(token) < 8:
            yield FieldProblem(
                where,
                f"the token in {proposer.token_env} is shorter than 8 characters",
                "use a long random token (e.g. `openssl rand -hex 32`)",
            )
        elif token in owners:
            yield FieldProblem(
                where,
                f"shares its token with proposer {owners[token]!r}",
                "give every proposer its own token",
            )
        else:
            owners[token] = proposer.name


def callback_secrets(settings: Settings, environ: Environ) -> Iterator[FieldProblem]:
    for index, proposer in enumerate(settings.proposers):
        for secret_name, env_name in proposer.callback_secret_env.items():
            secret = environ.get(env_name, "")
            if len(secret) < 16:
                yield FieldProblem(
                    f"proposers[{index}].callback_secret_env.{secret_name}",
                    f"environment variable {env_name} is "
                    + ("not set" if not secret else "shorter than 16 characters"),
                    f"export {env_name}=<a long random secret shared with the receiver>",
                )


def proposer_references(settings: Settings, environ: Environ) -> Iterator[FieldProblem]:
    """Kinds, audiences and reply chats a proposer names exist and are internal."""
    audience_names = {a.name for a in settings.audiences}
    outside_chats = settings.outside_chats()
    for index, proposer in enumerate(settings.proposers):
        where = f"proposers[{index}]"
        for kind in proposer.kinds:
            if kind != ANY and kind not in DOMAINS:
                yield FieldProblem(
                    f"{where}.kinds",
                    f"unknown kind {kind!r}",
                    f'use {", ".join(sorted(DOMAINS))} or "*"',
                )
        for chat in proposer.reply_chats or []:
            if chat in outside_chats:
                yield FieldProblem(
                    f"{where}.reply_chats",
                    f"{chat} is the chat of {outside_chats[chat]!r}, read by outsiders: the "
                    "counterparty would read the replies",
                    "remove it; name internal chats only",
                )
        for audience in proposer.audiences:
            if audience != ANY and audience not in audience_names:
                yield FieldProblem(
                    f"{where}.audiences",
                    f"no audience named {audience!r}",
                    "add it under [[audiences]] or remove it here",
                )


def internal_chats_stay_internal(settings: Settings, environ: Environ) -> Iterator[FieldProblem]:
    """Cards (terms, who decided) and the domains' internal chats (a draft's filing
    receipts) never go to a chat outsiders read."""
    outside_chats = settings.outside_chats()
    internal = [
        (f"audiences[{i}].chat_id", a.chat_id, "every card, its terms and who decided")
        for i, a in enumerate(settings.audiences)
    ] + [
        (f"domains.{plugin.config_table}.{field}", chat, what)
        for plugin in DOMAINS.values()
        for field, chat, what in plugin.internal_chats(settings.domains.for_kind(plugin.kind))
    ]
    for field_path, chat, what in internal:
        if chat in outside_chats:
            yield FieldProblem(
                field_path,
                f"{chat} is the chat of {outside_chats[chat]!r}, read by outsiders: "
                f"the counterparty would see {what}",
                "name an internal chat of its own",
            )


def expiry_bounds(settings: Settings, environ: Environ) -> Iterator[FieldProblem]:
    operations = settings.operations
    if operations.default_expires_in_s > operations.max_expires_in_s:
        yield FieldProblem(
            "operations.default_expires_in_s",
            "is larger than operations.max_expires_in_s",
            "lower it or raise the maximum",
        )


def lark_credentials(settings: Settings, environ: Environ) -> Iterator[FieldProblem]:
    lark = settings.lark
    if lark.mode == "off":
        return
    if not lark.app_id:
        yield FieldProblem(
            "lark.app_id",
            f"required when lark.mode = {lark.mode!r}",
            "copy the App ID (cli_...) from the developer console",
        )
    if not lark.tenant_keys:
        yield FieldProblem(
            "lark.tenant_keys",
            "no tenant is allowed",
            "add the tenant_key your app is installed in",
        )
    needed = [lark.app_secret_env]
    if lark.mode == "webhook":
        needed += [lark.encrypt_key_env, lark.verification_token_env]
    for env_name in needed:
        if not environ.get(env_name):
            yield FieldProblem(
                "lark",
                f"environment variable {env_name} is not set",
                f"export {env_name} (from the app's Credentials / Events page)",
            )


def card_time_zone(settings: Settings, environ: Environ) -> Iterator[FieldProblem]:
    try:
        zone(settings.cards.timezone)
    except ValueError:
        yield FieldProblem(
            "cards.timezone",
            f"unknown time zone {settings.cards.timezone!r}",
            'use an IANA name such as "UTC" or "Asia/Shanghai"',
        )


def store_url(settings: Settings, environ: Environ) -> Iterator[FieldProblem]:
    """A driver the store runs on, and a schema only where there are schemas."""
    url = settings.store.url
    if not url.startswith(STORE_DRIVERS):
        yield FieldProblem(
            "store.url",
            "names no driver countersign runs on",
            "start it with sqlite+aiosqlite:/// (a file) or postgresql+asyncpg:// (a server)",
        )
    if settings.store.schema_name and not url.startswith("postgresql"):
        yield FieldProblem("store.schema", "only applies to PostgreSQL", "remove it for SQLite")


STORE_DRIVERS = ("sqlite+aiosqlite:///", "postgresql+asyncpg://")


def web_sign_in(settings: Settings, environ: Environ) -> Iterator[FieldProblem]:
    """Sign-in needs where browsers come back to, and the Lark app it signs in with."""
    web, lark = settings.web, settings.lark
    if not web.sign_in:
        return
    if not web.public_url:
        yield FieldProblem(
            "web.public_url", "required when web.sign_in = true", "set the URL browsers open"
        )
    if not lark.app_id or not environ.get(lark.app_secret_env):
        yield FieldProblem(
            "web.sign_in",
            "needs lark.app_id and the app secret in " + lark.app_secret_env,
            "set both (the app's Credentials page), or set sign_in = false",
        )
    if not lark.tenant_keys:
        yield FieldProblem(
            "web.sign_in",
            "no tenant may sign in: lark.tenant_keys is empty",
            "add the tenant_key of your organisation",
        )


CHECKS: tuple[Check, ...] = (
    unique_names,
    domain_tables,
    domain_secrets,
    some_proposer,
    proposer_tokens,
    callback_secrets,
    proposer_references,
    internal_chats_stay_internal,
    expiry_bounds,
    lark_credentials,
    card_time_zone,
    store_url,
    approval_policy,
    web_sign_in,
)


def check(settings: Settings, environ: Environ) -> list[FieldProblem]:
    """Every problem every check finds, in the order of `CHECKS`."""
    return [problem for each in CHECKS for problem in each(settings, environ)]


def check_data(
    data: Mapping[str, Any], environ: Mapping[str, str]
) -> tuple[Settings | None, list[FieldProblem]]:
    """Validate raw config data and return every problem at once.

    When the schema is broken somewhere, the settings are None and the problems are the
    schema problems followed by what `check` finds in the rest (bot/config/partial.py): the
    valid values of every table, none of what would only follow from an invalid one.
    """
    try:
        settings = Settings.model_validate(data)
    except ValidationError as error:
        partial = partial_settings(Settings, data, error)
        return None, [*schema_problems(error), *_judged(partial, environ)]
    return settings, check(settings, environ)


def _judged(partial: Settings, environ: Environ) -> list[FieldProblem]:
    """What each check finds before it reads an invalid value."""
    found: list[FieldProblem] = []
    for each in CHECKS:
        try:
            for problem in each(partial, environ):
                found.append(problem)
        except InvalidRead:
            pass  # what it would say next could follow from the invalid value
        except Exception:
            # a check written for valid settings may trip on an unvalidated neighbour; the
            # schema problems already say what to fix
            pass
    return found
