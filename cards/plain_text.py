"""What people type, as it goes out to Lark: text, never markup. Pure.

`people_text` is the one rule for every outbound path that carries words someone typed or
shaped (a reject's reason, a request-changes note, a proposer's title or reason, a name, a
whole conclusion reply): text-command replies, conclusion replies, receipts, reminders and
the card. It returns text a person reads exactly as far as it can be shown, and that Lark
cannot turn into anything else:

- Hidden characters (controls, bidi embeddings/overrides/isolates/marks, zero-width and
  other format characters, line/paragraph separators, private use, unassigned code points,
  variation selectors) become U+FFFD, so a reader sees that something was there and nothing
  reorders or hides the rest. Tabs (and newlines in one-line text) become spaces; a joiner
  or a presentation selector that is part of an emoji is kept.
- Lark markup is disarmed. Replies go out as msg_type=text, whose content Lark parses:
  `<at user_id="all"></at>` mentions the whole chat, `<at user_id="ou_x">` one person,
  `<b> <i> <u> <s>` style, `[label](url)` shows a label instead of an address. Lark
  documents no escape for that content (a `post` message's text element is its documented
  plain form, but it would change the message type of every reply the bot sends, which
  readers and integrations rely on). So `<`, `>`, `[` and `]` go out as their fullwidth
  forms (U+FF1C, U+FF1E, U+FF3B, U+FF3D) and the `&` of an HTML entity as U+FF06: a
  person reads the same characters, Lark's parser finds no tag, link or entity. Cards show
  the same form (they carry people's words in plain_text elements anyway), so every
  surface says the same.
- Over-long text is cut at a character boundary a person sees (a grapheme), visibly: an
  ellipsis, then a note of how much was shown, in the reader's language.
"""

from __future__ import annotations

import regex

from cards.strings import Lang, text

# how much of a title (the domain's words for an operation) or a person's name a line shows
TITLE_MAX_CHARS = 120
NAME_MAX_CHARS = 64
# an operator's reason or note, a proposer's why, a venue's reason: a few sentences
WORDS_MAX_CHARS = 500
REPLACEMENT = "\ufffd"
HIDDEN = regex.compile(
    r"[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\p{Cn}\p{Default_Ignorable_Code_Point}]"
)
# parts of one emoji, not hidden text: a joiner between pictographs (a family, a
# "woman technologist"), an emoji's own text/emoji presentation selector
EMOJI_PARTS = regex.compile(
    r"(?<=\p{Extended_Pictographic}[\p{Emoji_Modifier}\uFE0F]*)\u200D(?=\p{Extended_Pictographic})"
    r"|(?<=\p{Emoji}\p{Emoji_Modifier}*)[\uFE0E\uFE0F]"
)
# more combining marks on one character than any script needs: they draw over other lines
MAX_MARKS = 4
STACKED_MARKS = regex.compile(rf"(\p{{M}}{{{MAX_MARKS}}})\p{{M}}+")
DISARMED = str.maketrans({"<": "\uff1c", ">": "\uff1e", "[": "\uff3b", "]": "\uff3d"})
ENTITY = regex.compile(r"&(?=#?[A-Za-z0-9]+;)")
GRAPHEME = regex.compile(r"\X")
ELLIPSIS = "…"


def people_text(value: object, cap: int, lang: Lang = "en", *, lines: bool = False) -> str:
    """`value` as Lark may show it: hidden characters replaced, markup disarmed, at most
    `cap` of its characters (then an ellipsis and a note). `lines`: newlines are kept
    (CR LF and CR become LF); otherwise the text is one line."""
    if cap < 1:
        raise ValueError(f"cap must be at least 1, got {cap}")
    shown = _visible(str(value).replace("\r\n", "\n").replace("\r", "\n"), lines)
    shown = ENTITY.sub("\uff06", shown.translate(DISARMED))
    return _within(shown, cap, lang)


def _visible(value: str, lines: bool) -> str:
    kept = {found.start() for found in EMOJI_PARTS.finditer(value)}

    def replaced(found: regex.Match[str]) -> str:
        char = found.group()
        if found.start() in kept or (lines and char == "\n"):
            return char
        return " " if char in "\t\n" else REPLACEMENT

    return STACKED_MARKS.sub(rf"\1{REPLACEMENT}", HIDDEN.sub(replaced, value))


def _within(value: str, cap: int, lang: Lang) -> str:
    if len(value) <= cap:
        return value
    kept: list[str] = []
    used = 0
    for grapheme in GRAPHEME.findall(value):
        if used + len(grapheme) > cap - len(ELLIPSIS):
            break
        kept.append(grapheme)
        used += len(grapheme)
    head = "".join(kept).rstrip()
    note = text("plain.cut", lang, shown=str(len(head)), total=str(len(value)))
    return head + ELLIPSIS + " " + note
