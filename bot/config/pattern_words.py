"""Every string format of the config and of the proposal schemas, said in words.

A field problem never shows a regex: `problems_from` (bot/config/validation.py) looks the
failed pattern up here. tests/bot/test_config_errors.py walks the Settings model, every
domain's settings and payloads, and the API's and MCP's inputs, and fails on a pattern
missing here, so a new format comes with its words.
"""

from __future__ import annotations

# a display name ([people]): one line that cannot format or mention in a card's markdown
DISPLAY_NAME_PATTERN = r"^[^\x00-\x1f\x7f<>*_~`\[\]|\\#]+$"

MARKDOWN_CHARACTERS = "< > * _ ~ ` [ ] | \\ #"
DECIMAL_AMOUNT = r"^[0-9]{1,15}(\.[0-9]{1,8})?$"
CURRENCY = r"^[A-Z0-9]{2,12}$"
ENV_NAME = r"^[A-Z_][A-Z0-9_]{0,127}$"
NAME = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"

# pattern -> (reason, fix); the rejected value is never echoed (it may be a misplaced secret)
PATTERN_WORDS: dict[str, tuple[str, str]] = {
    DISPLAY_NAME_PATTERN: (
        "is not a plain display name",
        f"use 1 to 64 characters, no control characters and none of {MARKDOWN_CHARACTERS}",
    ),
    # a service action's title on its card
    r"^[^\x00-\x1f<>*_~`\[\]|\\#]+$": (
        "is not one plain line of text",
        f"use 1 to 80 characters, no control characters and none of {MARKDOWN_CHARACTERS}",
    ),
    r"^ou_[A-Za-z0-9_-]{1,120}$": (
        "is not a Lark user open_id",
        "use the user's open_id, which starts with ou_",
    ),
    r"^oc_[A-Za-z0-9_-]{1,120}$": (
        "is not a Lark chat id",
        "use the chat's chat_id, which starts with oc_",
    ),
    r"^om_[A-Za-z0-9_-]{1,120}$": (
        "is not a Lark message id",
        "use the message's message_id, which starts with om_",
    ),
    ENV_NAME: (
        "is not an environment variable name",
        "use capital letters, digits and _, not starting with a digit",
    ),
    NAME: (
        "is not a valid name",
        "use up to 64 letters, digits and _ . : -, starting with a letter or digit",
    ),
    r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$": (
        "is not a valid request id",
        "use up to 128 letters, digits and _ . : -, starting with a letter or digit",
    ),
    r"^[0-9A-Za-z_-]{1,64}$": (
        "is not an operation id",
        "use the operation_id countersign answered with (up to 64 letters, digits, _ and -)",
    ),
    r"^(\*|[A-Za-z0-9]([A-Za-z0-9.-]{0,252}))$": (
        "is not a host name",
        'use a host name such as "bot.example.com" (letters, digits, . and -), or "*" for any',
    ),
    r"^[a-z_][a-z0-9_]{0,62}$": (
        "is not a PostgreSQL schema name",
        "use up to 63 lower-case letters, digits and _, not starting with a digit",
    ),
    r"^(https://[A-Za-z0-9.-]+|http://(127\.0\.0\.1|localhost|\[::1\]))(:[0-9]{1,5})?$": (
        "must be an https URL with no path",
        'use scheme, host and port only, like "https://bot.example.com" (no trailing /); '
        "plain http only for 127.0.0.1, localhost or [::1]",
    ),
    r"^https?://[^\s?#]+$": (
        "is not an http(s) URL",
        "use an http:// or https:// URL without spaces, a query or a fragment",
    ),
    r"^https?://[^\s/]+(:\d+)?$": (
        "must be an http(s) URL with no path",
        'use scheme, host and port only, like "https://api.hyperliquid.xyz" (no trailing /)',
    ),
    DECIMAL_AMOUNT: (
        "is not a plain decimal amount",
        'write it as a string of digits, like "50000" or "1250.5" '
        "(at most 8 decimals; no sign, separators or exponent)",
    ),
    CURRENCY: (
        "is not a currency code",
        'use 2 to 12 capital letters or digits, like "USDC"',
    ),
    r"^([01][0-9]|2[0-3]):[0-5][0-9]$": (
        "is not a time of day",
        'use 24-hour HH:MM, like "09:00"',
    ),
    r"^0x[0-9a-fA-F]{40}$": (
        "is not an account address",
        "use 0x followed by the address's 40 hexadecimal digits",
    ),
    r"^[A-Z0-9]{1,20}(-[A-Z0-9]{1,20}){0,3}$": (
        "is not an instrument name",
        'use capital letters and digits, in up to 4 parts joined by -, like "BTC-PERP"',
    ),
}

# a pattern nobody gave words yet (tests/bot/test_config_errors.py keeps this from happening)
UNKNOWN_FORMAT = (
    "is not in the format this field takes",
    "see this field in config.example.toml or the API's schema",
)
