"""Operator-facing texts, keyed by reason code and language. One catalogue, never inline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from store.reasons import Reason

Lang = Literal["en", "zh"]
LANGS: tuple[Lang, ...] = ("en", "zh")

# What an operator sees when a click is refused: what happened and what to do.
REFUSALS: Mapping[Reason, Mapping[Lang, str]] = {
    Reason.TRANSPORT_UNAUTHENTIC: {
        "en": "This click could not be verified. Please click again on the card in Lark.",
        "zh": "无法验证此次点击。请在飞书中的卡片上重新点击。",
    },
    Reason.APP_MISMATCH: {
        "en": "This card belongs to another app. Use the card posted by this bot.",
        "zh": "此卡片属于其他应用。请使用本机器人发布的卡片。",
    },
    Reason.TENANT_NOT_ALLOWED: {
        "en": "Your organization is not allowed to decide on this operation.",
        "zh": "您所在的组织无权处理此操作。",
    },
    Reason.OPERATION_UNKNOWN: {
        "en": "This operation is unknown. Ask the proposer to propose it again.",
        "zh": "找不到此操作。请让发起方重新提交。",
    },
    Reason.ACTION_UNKNOWN: {
        "en": "Unknown button. Use Confirm or Reject on the latest card.",
        "zh": "未知按钮。请使用最新卡片上的“确认”或“拒绝”。",
    },
    Reason.DIGEST_MISMATCH: {
        "en": "The terms changed since this card was shown. Review the latest card.",
        "zh": "卡片显示后条款已变更。请查看最新卡片。",
    },
    Reason.CHAT_MISMATCH: {
        "en": "Decisions are only accepted in the operation's own group.",
        "zh": "仅接受在该操作所属群组中的决定。",
    },
    Reason.MESSAGE_MISMATCH: {
        "en": "This is a copy of the card. Decide on the original card in the group.",
        "zh": "这是卡片的副本。请在群组中的原始卡片上操作。",
    },
    Reason.OPERATOR_NOT_ALLOWED: {
        "en": "You are not an operator for this operation. Ask an authorized operator.",
        "zh": "您不是此操作的授权操作员。请联系授权操作员。",
    },
    Reason.SELF_APPROVAL: {
        "en": "You requested this operation, so another operator must decide.",
        "zh": "此操作由您发起，需由其他操作员决定。",
    },
    Reason.EXPIRED: {
        "en": "This operation has expired. Ask the proposer to propose it again.",
        "zh": "此操作已过期。请让发起方重新提交。",
    },
    Reason.NOT_OFFERED: {
        "en": "This operation is not open for decisions yet. Try again shortly.",
        "zh": "此操作尚未开放决定。请稍后再试。",
    },
    Reason.ALREADY_CLAIMED: {
        "en": "Already confirmed. Nothing more to do.",
        "zh": "已确认，无需再次操作。",
    },
    Reason.ALREADY_REJECTED: {
        "en": "Already rejected. Ask the proposer for a new proposal if needed.",
        "zh": "已拒绝。如有需要，请让发起方重新提交。",
    },
    Reason.CANCELLED: {
        "en": "The proposer cancelled this operation.",
        "zh": "发起方已取消此操作。",
    },
    Reason.SUPERSEDED: {
        "en": "A newer draft replaced this one. Review the latest card.",
        "zh": "已有更新的草稿替代此草稿。请查看最新卡片。",
    },
}


def refusal_text(reason: Reason, lang: Lang = "en") -> str:
    return REFUSALS[reason][lang]
