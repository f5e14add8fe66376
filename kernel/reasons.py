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
    MALFORMED_ENVELOPE = "malformed_envelope"  # not storable as sent: float, depth, long ids
    NOTE_REQUIRED = "note_required"  # "Request changes" with nothing written to the proposer
    DIGEST_MISMATCH = "digest_mismatch"
    CHAT_MISMATCH = "chat_mismatch"
    MESSAGE_MISMATCH = "message_mismatch"
    OPERATOR_NOT_ALLOWED = "operator_not_allowed"
    SELF_APPROVAL = "self_approval"
    # a quorum: only the approvers a rule names may confirm; each person counts once; the
    # audience's policy changed since the card was posted (the card is stale)
    NOT_AN_APPROVER = "not_an_approver"
    ALREADY_CONFIRMED = "already_confirmed"
    # delegated rights: the delegation that let this person decide was revoked or has ended;
    # the right they would confirm with was already used on this operation (by its holder
    # or another delegate)
    DELEGATION_ENDED = "delegation_ended"
    RIGHT_USED = "right_used"
    POLICY_CHANGED = "policy_changed"
    EXPIRED = "expired"
    # the operation's state
    NOT_OFFERED = "not_offered"
    ALREADY_CLAIMED = "already_claimed"
    ALREADY_REJECTED = "already_rejected"
    CANCELLED = "cancelled"
    SUPERSEDED = "superseded"
    CHANGES_REQUESTED = "changes_requested"
    # a click received before a crash and never decided: recorded on restart, never applied
    RECOVERED_UNANSWERED = "recovered_unanswered"
    # answered "busy" before it was on record: the operator was told to click again, so it is
    # recorded, once it can be, and never applied
    ANSWERED_BUSY = "answered_busy"
