"""How Lark reads the content of a text message: mentions, links and styles. Pure.

Lark's "send message content structure" page documents, for msg_type=text:
`<at user_id="ou_x">name</at>` mentions a user (an open id or user id), `<at
user_id="all"></at>` mentions everyone in the chat, `<b> <i> <u> <s>` style the text and
`[label](url)` is a link that shows its label. The sandbox also reads `<a href="url">label</a>`
as a link (Lark's clients render it; its text docs do not list it) and is lenient the way a
parser in the wild is: any case, spaces around `=`, quotes optional, `open_id`/`id`/`email`
as well as `user_id`. Only ASCII `<`, `>`, `[` and `]` delimit: look-alike characters are text.

`read_text` says what a person sees and what Lark did: who was mentioned ("all" for
everyone) and which addresses were linked. The control API shows it with each text message.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

ALL = "all"
AT = re.compile(
    r"<\s*at\s+(?:user_id|open_id|id|email)\s*=\s*[\"']?([^\"'>\s]*)[\"']?[^>]*>"
    r"(?:(.*?)<\s*/\s*at\s*>)?",
    re.IGNORECASE | re.DOTALL,
)
ANCHOR = re.compile(
    r"<\s*a\s+[^>]*?href\s*=\s*[\"']?([^\"'>\s]+)[\"']?[^>]*>(.*?)<\s*/\s*a\s*>",
    re.IGNORECASE | re.DOTALL,
)
MARKDOWN_LINK = re.compile(r"\[([^\]\n]*)\]\(([^)\s]+)\)")
STYLE = re.compile(r"<\s*/?\s*[bius]\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class TextReading:
    shown: str  # what a person reads in the chat
    mentions: tuple[str, ...]  # the ids mentioned, in order; "all" for everyone
    links: tuple[str, ...]  # the addresses linked, in order

    def as_json(self) -> dict[str, object]:
        return {"shown": self.shown, "mentions": list(self.mentions), "links": list(self.links)}


def read_text(text: str, names: Mapping[str, str]) -> TextReading:
    """`text` (a text message's content.text) as Lark shows it; `names`: open id -> name."""
    mentions: list[str] = []
    links: list[str] = []

    def mention(found: re.Match[str]) -> str:
        who = found.group(1)
        mentions.append(ALL if who.lower() == ALL else who)
        if who.lower() == ALL:
            return "@All"
        return f"@{names.get(who) or (found.group(2) or '').strip() or who}"

    def linked(address: int, label: int) -> Callable[[re.Match[str]], str]:
        def link(found: re.Match[str]) -> str:
            links.append(found.group(address))
            return found.group(label) or found.group(address)

        return link

    shown = AT.sub(mention, text)
    shown = ANCHOR.sub(linked(1, 2), shown)
    shown = MARKDOWN_LINK.sub(linked(2, 1), shown)
    return TextReading(STYLE.sub("", shown), tuple(mentions), tuple(links))
