"""Finding English left in a zh surface: every Latin word that is not a proper name, an id,
a unit or a command a person types (those stay as they are in any language).

What a surface may keep of an operation is derived from the operation itself and the config
(`operation_words`, `config_words`), never listed by hand: names and free text its proposer
filed, the names the config gives people, audiences and destinations. An enumerated value
("buy", "GTC") or a word of the product is none of those, so one left English fails."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from store import OperationView
from workers.domains import DOMAINS

# a word of Latin letters, and the ids and tokens that are not words of a language (an
# app's cli_ id, a request id the CLI made: cli- and a digest's start)
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]")
NOT_WORDS = re.compile(
    r"\b(?:o[umc]_[A-Za-z0-9_]+|cli_[a-z0-9]+|cli-[0-9a-f]{8,}|[0-9A-Z]{26}|[0-9a-f]{8,}|\d+[dh])\b"
    r"|https?://\S+|`[^`]*`|<at [^>]*></at>|\bconfig:\S+"
)
# the product, the platform, instruments, currencies, zones and protocols: names in any
# language
PROPER = frozenset(
    {
        "countersign",
        "Lark",
        "BTC",
        "PERP",
        "ETH",
        "USDC",
        "USD",
        "UTC",
        "CST",
        "HTTP",
        "Hyperliquid",
        "SHA",
        "ID",  # an id, as Chinese pages say it
        "English",  # the language switch names each language in its own words
    }
)
# the commands a person types in the chat, the same in every language
COMMANDS = frozenset(
    {"help", "pending", "status", "health", "delegate", "undelegate", "delegations", "until"}
)


def english_left(text: str, allowed: Iterable[str] = ()) -> list[str]:
    """The Latin words of `text` that a zh reader would find untranslated."""
    keep = PROPER | COMMANDS | frozenset(allowed)
    stripped = NOT_WORDS.sub(" ", text)
    return [word for word in LATIN_WORD.findall(stripped) if word not in keep]


def words_of(*texts: Any) -> set[str]:
    """Every Latin word of these texts (and of the strings inside lists and mappings)."""
    found: set[str] = set()
    for each in texts:
        if isinstance(each, str):
            found.update(LATIN_WORD.findall(each))
        elif isinstance(each, Mapping):
            found |= words_of(*each.values())
        elif isinstance(each, (list, tuple, set, frozenset)):
            found |= words_of(*each)
    return found


@cache
def _free_fields(kind: str) -> frozenset[str]:
    """The payload fields of a kind a proposer writes freely (a string no enum bounds): a
    name, an instrument, a message's text. An enumerated field is the product's word."""
    domain = DOMAINS.get(kind)
    model = domain.schema(1) if domain is not None else None
    if model is None:
        return frozenset()
    free = set()
    for name, spec in model.model_json_schema().get("properties", {}).items():
        options = spec.get("anyOf", [spec])
        if any(o.get("type") == "string" and "enum" not in o for o in options):
            free.add(name)
    return frozenset(free)


def operation_words(view: OperationView) -> set[str]:
    """The words an operation's own inputs bring to any surface: its id, proposer, executor,
    audience, the free terms its proposer filed (names, a message's text), the proposer's
    and the operator's own words, and ids an outcome carries."""
    free = _free_fields(view.kind)
    terms = [t["value"] for t in view.terms.get("terms", []) if t.get("name") in free]
    ids = [
        value
        for outcome in view.outcomes
        for key, value in outcome.detail.items()
        if key.endswith("_id")
    ]
    decision = view.decision
    return words_of(
        view.id,
        view.kind,
        view.source.request_id,
        view.source.proposer,
        view.source.reason,
        view.executor.name,
        view.audience.name,
        terms,
        ids,
        decision.reason if decision else None,
    )


def config_words(people: Mapping[str, str], settings: Any = None) -> set[str]:
    """The names the config gives: people's display names and every configured `name` in
    the settings (audiences, destinations, accounts, proposers, rules), as JSON."""
    return words_of(list(people.values()), _names(settings))


def _names(node: Any) -> list[Any]:
    if isinstance(node, Mapping):
        found = [node["name"]] if isinstance(node.get("name"), str) else []
        return found + [name for value in node.values() for name in _names(value)]
    if isinstance(node, list):
        return [name for value in node for name in _names(value)]
    return []


def card_texts(node: Any, locale: str = "zh_cn") -> list[str]:
    """What a Lark card shows a reader of `locale`: each text's `content`, or its version in
    `locale` where it has one (`i18n_content`)."""
    found: list[str] = []
    if isinstance(node, Mapping):
        versions = node.get("i18n_content")
        if isinstance(versions, Mapping) and isinstance(versions.get(locale), str):
            found.append(versions[locale])
        elif isinstance(node.get("content"), str):
            found.append(node["content"])
        for key, value in node.items():
            if key not in ("content", "i18n_content"):
                found += card_texts(value, locale)
    elif isinstance(node, list):
        for value in node:
            found += card_texts(value, locale)
    return found


SCRIPTS = re.compile(r"<(script|style)\b.*?</\1>", re.S | re.I)
SHOWN_ATTRIBUTES = re.compile(r'\b(?:title|placeholder|aria-label|alt)="([^"]*)"', re.I)
TAG = re.compile(r"<[^>]*>")


def html_texts(html: str) -> list[str]:
    """What a page shows a reader: its text between tags and the attributes a browser shows
    (a title, a placeholder, an aria-label), unescaped; no scripts, no styles."""
    from html import unescape

    body = SCRIPTS.sub(" ", html)
    shown = [unescape(value) for value in SHOWN_ATTRIBUTES.findall(body)]
    shown += [unescape(run).strip() for run in TAG.split(body)]
    return [each for each in shown if each]
