"""Refusal reason codes: one enum. Operator-facing texts are keys into cards' catalogue."""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    # transport and tenancy
    TRANSPORT_UNAUTHENTIC = "transport_unauthentic"
    APP_MISMATCH = "app_mismatch"
    TENANT_NOT_ALLOWED = "tenant_not_allowed"
    # the click itself
    OPERATION_UNKNOWN = "operation_unknown"
    ACTION_UNKNOWN = "action_unknown"
    MALFORMED_VALUE = "malformed_value"
    DIGEST_MISMATCH = "digest_mismatch"
    CHAT_MISMATCH = "chat_mismatch"
    MESSAGE_MISMATCH = "message_mismatch"
    OPERATOR_NOT_ALLOWED = "operator_not_allowed"
    SELF_APPROVAL = "self_approval"
    EXPIRED = "expired"
    # the operation's state
    NOT_OFFERED = "not_offered"
    ALREADY_CLAIMED = "already_claimed"
    ALREADY_REJECTED = "already_rejected"
    CANCELLED = "cancelled"
    SUPERSEDED = "superseded"
