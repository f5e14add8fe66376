"""Words stored in one language (English), worded in a reader's at render time: a term's
enumerated value, an operation's title, an executor's or pre-check's reason and hint, a
policy version's change lines.

What is stored stays as it is (digests bind the projection and each outcome); the catalogue
(cards/stored_strings.py) has an entry per stored text whose en is that text, its {values}
read back from it. A text no entry matches (a venue's or a person's own words) reads as
stored. Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from cards.strings import TEXT, Lang, text

PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _pattern(template: str) -> re.Pattern[str]:
    """An en template as a pattern that reads its {values} back out of the stored text."""
    parts, last = [], 0
    for found in PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[last : found.start()]))
        parts.append(f"(?P<{found.group(1)}>.+?)")
        last = found.end()
    parts.append(re.escape(template[last:]))
    return re.compile("".join(parts), re.DOTALL)


@cache
def _values_index() -> Mapping[tuple[str, str], str]:
    """(term name, value as filed) -> its catalogue key."""
    found = {}
    for key, entry in TEXT.items():
        if key.startswith("value."):
            name = key.split(".")[1]
            found[(name, entry["en"])] = key
    return found


@cache
def _said_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple(
        (key, _pattern(entry["en"]))
        for key, entry in TEXT.items()
        if key.startswith(("said.", "hint."))
    )


def stored_value(name: str, value: Any, lang: Lang) -> str | None:
    """An enumerated term value in `lang` ("buy" -> "买入"), or None: not one the catalogue
    words (a name, a number, a person's text)."""
    if not isinstance(value, str):
        return None
    key = _values_index().get((name, value))
    return None if key is None else text(key, lang)


def stored_said(said: str, lang: Lang, code: str | None = None) -> str:
    """A reason or hint the executor stored in English, in `lang`: its code's entry first,
    then any entry whose en it is; as stored when none is."""
    if lang == "en":
        return said
    ordered = sorted(_said_patterns(), key=lambda each: each[0] != f"said.{code}")
    for key, pattern in ordered:
        if (matched := pattern.fullmatch(said)) is not None:
            return text(key, lang, **matched.groupdict())
    return said


def stored_title(kind: str, terms: list[Mapping[str, Any]], lang: Lang) -> str | None:
    """An operation's title in `lang` from its terms, or None (no entry for its kind, or a
    term it names missing): the stored title then."""
    entry = TEXT.get(f"title.{kind}")
    if entry is None:
        return None
    values: dict[str, str] = {}
    for term in terms:
        name, value = str(term.get("name")), term.get("value")
        if value is None:
            continue
        worded = stored_value(name, value, lang)
        values[name] = worded if worded is not None else str(value)
        values[name.upper()] = values[name].upper()
    try:
        return entry[lang].format(**values)
    except (KeyError, IndexError, ValueError):
        return None


# a change line (bot/config/policy_document.py `_line`): "where: what" or "where: key.path:
# what"; where is a section's member ("audience ops") or a part ("second look")
WHERE = re.compile(
    r"(?P<section>audience|rule|proposer) (?P<name>\S+)|\[domains\.(?P<domain>[^\]]+)\]"
)
KEY_PATH = re.compile(r"[\w-]+(?:\.[\w-]+)*")


def stored_policy_line(line: str, lang: Lang) -> str:
    """A policy change line as the ledger keeps it (English), in `lang`: where, which
    setting and what happened worded; names, ids and values as stored. A line of another
    shape reads as stored."""
    if lang == "en":
        return line
    said = stored_said(line, lang)
    if said != line:  # a whole-line entry: the first policy, a new scheme
        return said
    where, _, rest = line.partition(": ")
    worded = _where(where, lang)
    if worded is None or not rest:
        return line
    path, _, what = rest.partition(": ")
    if what and KEY_PATH.fullmatch(path):
        keys = ".".join(_setting(key, lang) for key in path.split("."))
        return f"{worded}：{keys}：{_what(what, lang)}"
    return f"{worded}：{_what(rest, lang)}"


def _where(where: str, lang: Lang) -> str | None:
    if (part := TEXT.get(f"policy.where.{where.replace(' ', '_')}")) is not None:
        return part[lang]
    found = WHERE.fullmatch(where)
    if found is None:
        return None
    if found["domain"] is not None:
        return text("policy.where.domain", lang, name=found["domain"])
    return text(f"policy.where.{found['section']}", lang, name=found["name"])


def _setting(key: str, lang: Lang) -> str:
    entry = TEXT.get(f"policy.key.{key}")
    return entry[lang] if entry is not None else key


def _what(what: str, lang: Lang) -> str:
    """ "added X; removed Y", "removed", "a → b": the words worded, the values as stored
    but for none, true and false."""
    said = []
    for part in what.split("; "):
        if part == "removed":
            said.append(text("policy.removed", lang))
        elif part.startswith("added "):
            said.append(text("policy.added", lang, value=_scalar(part[6:], lang)))
        elif part.startswith("removed "):
            said.append(text("policy.removed_value", lang, value=_scalar(part[8:], lang)))
        elif " → " in part:
            before, _, after = part.partition(" → ")
            said.append(f"{_scalar(before, lang)} → {_scalar(after, lang)}")
        else:
            said.append(part)
    return "；".join(said)


def _scalar(value: str, lang: Lang) -> str:
    entry = TEXT.get(f"policy.value.{value}")
    return entry[lang] if entry is not None else value
