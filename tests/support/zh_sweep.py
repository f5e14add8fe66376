"""Finding English left in a zh surface: every Latin word that is not a proper name, an id,
a unit or a command a person types (those stay as they are in any language)."""

from __future__ import annotations

import re
from collections.abc import Iterable

# a word of Latin letters, and the ids and tokens that are not words of a language
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]")
NOT_WORDS = re.compile(
    r"\b(?:o[umc]_[A-Za-z0-9_]+|cli_[a-z0-9]+|[0-9A-HJKMNP-TV-Z]{26}|\d+[dh])\b"
    r"|https?://\S+|`[^`]*`"
)
# names and units the zh surfaces keep (people, the product, instruments, currencies, venues)
PROPER = frozenset(
    {
        "countersign",
        "Alice",
        "Bob",
        "Carol",
        "Mallory",
        "Eve",
        "Lark",
        "BTC",
        "PERP",
        "ETH",
        "USDC",
        "USD",
        "UTC",
        "CST",
        "SIMULATED",
        "EMULATOR",
        "TESTNET",
        "LIVE",
        "Hyperliquid",
        "acme",
        "supplier",
        "ops",
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
