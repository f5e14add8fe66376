"""A card Lark refuses: the API code and Lark's message, with the card sub-code it names."""

from __future__ import annotations

from dataclasses import dataclass

CARD_CONTENT_FAILED = 230099  # "Failed to create card content" (im/v1/message create, patch)

# Sub-codes Lark puts in the message of a 230099 (docs/lark-reference.md §6.1)
PARSE_ERROR = 200621  # "parse card json err": bad JSON, unknown property (seen live)
SCHEMA_V2_UNSUPPORTED = 200861  # a 1.0-only component in a 2.0 card
LIMIT_OR_STATE = 11310  # "element exceeds the limit", a duplicate name, "card action is lock"
INVALID_USER = 100290  # an <at>/person naming no one the app can see
# Documented as the client error of a form whose component has an empty `name` (§1.3); the
# sandbox refuses such a card when it is sent (its choice: the create refusal is not documented)
FORM_NAME_EMPTY = 200530

PARSE_ERR_MSG = "parse card json err, please check whether the card json is correct"


@dataclass(frozen=True)
class CardProblem:
    code: int
    msg: str
    sub_code: int = 0


def card_content_failed(
    sub_code: int, err_msg: str, *, value: str = "", path: str = ""
) -> CardProblem:
    """Lark's text: `Failed to create card content, ext=ErrCode: N; ErrPath: ...; ErrMsg: ...;
    ErrorValue: ...; ` (the documented sub-code table of im/v1/message create)."""
    parts = [f"Failed to create card content, ext=ErrCode: {sub_code}"]
    if path:
        parts.append(f"ErrPath: {path}")
    parts.append(f"ErrMsg: {err_msg}")
    if value:
        parts.append(f"ErrorValue: {value}")
    return CardProblem(CARD_CONTENT_FAILED, "; ".join(parts) + "; ", sub_code)
