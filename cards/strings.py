"""Operator-facing texts, keyed by reason code and language. One catalogue, never inline."""

# Over 400 lines: one catalogue of every operator-facing string, en and zh side by side.

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from cards.chat_strings import CHAT_TEXT
from cards.stored_strings import STORED_TEXT
from kernel.reasons import Reason

Lang = Literal["en", "zh"]
LANGS: tuple[Lang, ...] = ("en", "zh")

# What an operator sees when a click is refused: what happened and what to do.
# a confirmation that counts toward a quorum but is not the last one needed
COUNTED_TOAST: Mapping[Lang, str] = {
    "en": "Confirmation counted: {counted} of {required}. Waiting for the others.",
    "zh": "已计入确认：{counted}/{required}，等待其他操作员。",
}

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
    Reason.MALFORMED_VALUE: {
        "en": "This button is not one this bot made. Use the buttons on the bot's card.",
        "zh": "此按钮不是本机器人生成的。请使用机器人卡片上的按钮。",
    },
    Reason.MALFORMED_ENVELOPE: {
        "en": "This click could not be read. Please click again on the card in Lark.",
        "zh": "无法读取此次点击。请在飞书中的卡片上重新点击。",
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
    Reason.NOT_AN_APPROVER: {
        "en": "The approval policy names who may confirm this operation, and you are not one "
        "of them. You can still reject it.",
        "zh": "审批策略指定了可确认此操作的人员，您不在其中。您仍可拒绝。",
    },
    Reason.ALREADY_CONFIRMED: {
        "en": "You already confirmed this. It counts once; it waits for another operator.",
        "zh": "您已确认过此操作，只计一次；正在等待其他操作员。",
    },
    Reason.DELEGATION_ENDED: {
        "en": "The delegation that let you decide here was revoked or has ended. Nothing was done.",
        "zh": "允许您在此决定的委托已被撤销或已结束，未执行任何操作。",
    },
    Reason.RIGHT_USED: {
        "en": "This approval right was already used on this operation (by its holder or a "
        "delegate). It counts once; it waits for another operator.",
        "zh": "此审批权已在此操作上使用过（由本人或其受托人），只计一次；正在等待其他操作员。",
    },
    Reason.POLICY_CHANGED: {
        "en": "The approval policy changed since this card was posted. Nothing was done; "
        "ask the proposer to propose it again.",
        "zh": "此卡片发出后审批策略已变更，未执行任何操作；请让发起方重新提交。",
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
    Reason.CHANGES_REQUESTED: {
        "en": "An operator asked for changes; the rewritten draft comes as a new card.",
        "zh": "操作员已要求修改；修改后的草稿将以新卡片发出。",
    },
    Reason.NOTE_REQUIRED: {
        "en": "Write what should change in the box, then press Request changes.",
        "zh": "请在输入框中写明需要修改的内容，然后点击“要求修改”。",
    },
    Reason.RECOVERED_UNANSWERED: {
        "en": "This click was interrupted by a restart and not applied. Please click again.",
        "zh": "此次点击因重启中断，未被执行。请重新点击。",
    },
    Reason.ANSWERED_BUSY: {
        "en": "Busy, please click again in a moment",
        "zh": "系统繁忙，请稍后再点击",
    },
}


def refusal_text(reason: Reason, lang: Lang = "en") -> str:
    return REFUSALS[reason][lang]


# Labels and phrases on cards. Keys are stable; values per language.
TEXT: Mapping[str, Mapping[Lang, str]] = {
    **CHAT_TEXT,  # what the text listener answers (cards/chat_strings.py)
    **STORED_TEXT,  # words stored in one language, worded at render time (cards/stored_words.py)
    # A kind's own words (its title and headlines, its terms' labels, its outcomes' words)
    # are its domain's, carried by the projection and the outcome rows (cards/vocabulary.py);
    # these read for an operation filed before they were
    "kind.title": {"en": "Confirm operation", "zh": "确认操作"},
    "kind.waiting": {"en": "Operation to confirm", "zh": "待确认操作"},
    "kind.partly": {
        "en": "Operation to confirm — {count} of {required} confirmed",
        "zh": "待确认操作 — 已确认 {count}/{required}",
    },
    "expires": {"en": "Expires", "zh": "过期时间"},
    # approval policy (N of M): cards/approval.py
    "approval.needs": {
        "en": "Needs {required} of {of} operators — {why}",
        "zh": "需要 {of} 名操作员中的 {required} 名确认 — {why}",
    },
    "approval.needs.plain": {
        "en": "Needs {required} of {of} operators",
        "zh": "需要 {of} 名操作员中的 {required} 名确认",
    },
    "approval.only": {
        "en": "Only {who} may confirm — {why}",
        "zh": "仅 {who} 可确认 — {why}",
    },
    "approval.above": {"en": "above {amount}", "zh": "超过 {amount}"},
    "approval.unknown": {
        "en": "notional unknown, counted as above {amount}",
        "zh": "名义金额未知，按超过 {amount} 计",
    },
    "approval.rule": {"en": "rule {name}", "zh": "规则 {name}"},
    "approval.for": {
        "en": "{who}, for {whom}, until {until}",
        "zh": "{who}（代 {whom}，至 {until}）",
    },
    "approval.progress": {
        "en": "{count} of {required} confirmed: {who} · waiting for {left} more",
        "zh": "已确认 {count}/{required}：{who} · 还需 {left} 人",
    },
    "reminder": {
        "en": "Reminder: {title} expires in {minutes} min ({at}) and nothing runs unless it is "
        "confirmed. {count} of {required} confirmed; waiting for {who}",
        "zh": "提醒：{title} 将在 {minutes} 分钟后（{at}）过期，未确认则不会执行。"
        "已确认 {count}/{required}；等待 {who}",
    },
    "approval.notional": {"en": "Notional (worst case)", "zh": "名义金额（最坏情况）"},
    "approval.dialog.title": {"en": "Confirm this operation?", "zh": "确认此操作"},
    "approval.dialog.text": {
        "en": "{title} · notional {notional} · needs {required} of {of} operators. "
        "Confirm only if these are the terms you expect.",
        "zh": "{title} · 名义金额 {notional} · 需要 {of} 名中的 {required} 名确认。"
        "请仅在条款符合预期时确认。",
    },
    "requested_by.unverified": {
        "en": "Requested by: {who} (unverified id)",
        "zh": "发起人：{who}（未经验证的 ID）",
    },
    "button.confirm": {"en": "Confirm", "zh": "确认"},
    "button.reject": {"en": "Reject", "zh": "拒绝"},
    "button.reject_no_reason": {"en": "Reject without reason", "zh": "直接拒绝（不填原因）"},
    "button.request_changes": {"en": "Request changes", "zh": "要求修改"},
    "steer.note": {
        "en": "Reason for a reject, or the changes you ask for (the proposer sees it)",
        "zh": "拒绝原因，或需要修改的内容（发起方可见）",
    },
    "reject.reason": {
        "en": "Reason, if you reject (optional; the proposer sees it)",
        "zh": "拒绝原因（可选，发起方可见）",
    },
    "state.claimed": {"en": "Confirmed by {who} at {at}", "zh": "由 {who} 于 {at} 确认"},
    "state.outcome_observed": {"en": "Confirmed by {who} at {at}", "zh": "由 {who} 于 {at} 确认"},
    "state.rejected": {"en": "Rejected by {who} at {at}", "zh": "由 {who} 于 {at} 拒绝"},
    # the same, decided on the web (the dashboard, signed in with Lark) rather than the card
    "state.claimed.web": {
        "en": "Confirmed by {who} on the web at {at}",
        "zh": "由 {who} 于 {at} 在网页上确认",
    },
    "state.outcome_observed.web": {
        "en": "Confirmed by {who} on the web at {at}",
        "zh": "由 {who} 于 {at} 在网页上确认",
    },
    # decided by a time-boxed draft's clock: nobody decided before its auto_send_at
    "state.claimed.auto": {
        "en": "Approved by the clock at {at}: nobody decided within the time box",
        "zh": "无人在时限内处理，已于 {at} 自动批准",
    },
    "state.outcome_observed.auto": {
        "en": "Approved by the clock at {at}: nobody decided within the time box",
        "zh": "无人在时限内处理，已于 {at} 自动批准",
    },
    "state.rejected.web": {
        "en": "Rejected by {who} on the web at {at}",
        "zh": "由 {who} 于 {at} 在网页上拒绝",
    },
    "state.cancelled": {"en": "Cancelled by the proposer", "zh": "发起方已取消"},
    "state.expired": {
        "en": "Expired at {at}: propose again if still needed",
        "zh": "已于 {at} 过期：如仍需要请重新提交",
    },
    "state.superseded": {"en": "Superseded by a newer draft", "zh": "已被更新的草稿取代"},
    "state.changes_requested": {
        "en": "Changes requested by {who} at {at}",
        "zh": "由 {who} 于 {at} 要求修改",
    },
    "detail.note": {"en": "Changes asked: {reason}", "zh": "修改要求：{reason}"},
    "toast.changes_requested": {
        "en": "Sent back to the proposer with your note",
        "zh": "已附上您的说明退回发起方",
    },
    "toast.confirmed": {"en": "Confirmed", "zh": "已确认"},
    "toast.rejected": {"en": "Rejected", "zh": "已拒绝"},
    "toast.processing": {"en": "Received, processing", "zh": "已收到，处理中"},
    "toast.busy": {"en": "Busy, please click again in a moment", "zh": "系统繁忙，请稍后再点击"},
    # which world an operation acts in (cards/world.py), marked on every surface
    "world.simulated": {"en": "SIMULATED", "zh": "模拟"},
    "world.emulator": {"en": "EMULATOR", "zh": "仿真"},
    "world.testnet": {"en": "TESTNET", "zh": "测试网"},
    "world.live": {"en": "LIVE", "zh": "实盘"},
    "world.none": {"en": "no venue", "zh": "非交易场所"},  # a kind that is not a venue
    "span.days": {"en": "{d}d {h}h", "zh": "{d}天{h}小时"},
    "span.hours": {"en": "{h}h{m}m", "zh": "{h}小时{m}分"},
    "span.minutes": {"en": "{m} min", "zh": "{m}分钟"},
    "span.seconds": {"en": "{s} s", "zh": "{s}秒"},
    "relative.in": {"en": "in {span}", "zh": "{span}后"},
    "relative.ago": {"en": "{span} ago", "zh": "{span}前"},
    # the message text's label: what becomes of the text (cards/terms.py picks one)
    "text.block": {
        "en": "Message text ({lines} · {chars}), sent exactly as shown:",
        "zh": "消息正文（{lines} · {chars}），按原样发送：",
    },
    "text.block.sent": {
        "en": "Message text ({lines} · {chars}), as it was sent:",
        "zh": "消息正文（{lines} · {chars}），即已发送的内容：",
    },
    "text.block.unsure": {
        "en": "Message text ({lines} · {chars}), which may have been sent:",
        "zh": "消息正文（{lines} · {chars}），可能已发送：",
    },
    "text.block.closed": {
        "en": "Message text ({lines} · {chars}), not sent:",
        "zh": "消息正文（{lines} · {chars}），未发送：",
    },
    "text.lines.one": {"en": "1 line", "zh": "1 行"},
    "text.lines": {"en": "{n} lines", "zh": "{n} 行"},
    "text.chars.one": {"en": "1 character", "zh": "1 个字符"},
    "text.chars": {"en": "{n} characters", "zh": "{n} 个字符"},
    "outcome.reconciled": {"en": "Reconciled: {status}", "zh": "核对结果：{status}"},
    # how an operation that never ran concludes (store/deliveries/conclusions.py)
    "outcome.declined": {"en": "Rejected — nothing executed", "zh": "已拒绝 — 未执行"},
    "outcome.expired": {"en": "Expired — nothing executed", "zh": "已过期 — 未执行"},
    "outcome.changes_requested": {
        "en": "Changes requested — nothing sent",
        "zh": "已要求修改 — 未发送",
    },
    # the conclusion replied in the proposer's thread (cards/conclusion.py)
    "reply.head": {"en": "{title}: {status}", "zh": "{title}：{status}"},
    "reply.reconciled": {
        "en": "Reconciled: {title} is {status} (this settles the earlier outcome {digest})",
        "zh": "核对结果：{title} 为 {status}（取代先前的结果 {digest}）",
    },
    "reply.expired": {
        "en": "Nobody decided before {at}: nothing was run",
        "zh": "{at} 前无人决定：未执行任何操作",
    },
    "reply.card": {"en": "Card: {card} · operation {id}", "zh": "卡片：{card} · 操作 {id}"},
    "reply.no_card": {"en": "not posted", "zh": "未发出"},
    "protective.stop_loss": {"en": "Stop loss {price}", "zh": "止损 {price}"},
    "protective.take_profit": {"en": "Take profit {price}", "zh": "止盈 {price}"},
    "protective.accepted": {"en": "armed", "zh": "已挂出"},
    "protective.filled": {"en": "triggered, filled", "zh": "已触发成交"},
    "protective.cancelled": {"en": "cancelled", "zh": "已撤销"},
    "protective.rejected": {"en": "rejected", "zh": "被拒绝"},
    "detail.message": {"en": "Message {message_id}", "zh": "消息 {message_id}"},
    # a sent message by whom it went to and when (its Lark id is the footer's, a detail)
    "detail.sent": {"en": "Sent to {to} at {at}", "zh": "已于 {at} 发送给 {to}"},
    "detail.sent.at": {"en": "Sent at {at}", "zh": "已于 {at} 发送"},
    "card.footer.message": {"en": "message {message_id}", "zh": "消息 {message_id}"},
    "detail.answer": {"en": "Answer: {answer}", "zh": "答复：{answer}"},
    "outcome.in_world": {"en": "{status} · {world}", "zh": "{status} · {world}"},
    "detail.filled": {"en": "Filled {qty} at {price}", "zh": "成交 {qty}，均价 {price}"},
    "detail.fees": {"en": "Fees {fees}", "zh": "手续费 {fees}"},
    "detail.fee_unknown": {"en": "Fee unknown", "zh": "手续费未知"},
    "detail.reason": {"en": "Reason: {reason}", "zh": "原因：{reason}"},
    "detail.hint": {"en": "Next: {hint}", "zh": "下一步：{hint}"},
    # people's words cut to fit (cards/plain_text.py): never silently
    "plain.cut": {
        "en": "(cut: the first {shown} of {total} characters are shown)",
        "zh": "（已截断：显示 {total} 个字符中的前 {shown} 个）",
    },
    # the text listener's `status` with something that is no operation id: never echoed
    "text.not_an_id": {
        "en": "That is not an operation id (ids are letters and digits, as `pending` lists them).",
        "zh": "这不是操作编号（编号由字母和数字组成，见 `pending` 列表）。",
    },
    # the executor gave up after failed passes in a row (workers/execution_failures.py)
    "detail.executor_failed": {
        "en": "Execution failed {count} times in a row ({error})",
        "zh": "执行连续失败 {count} 次（{error}）",
    },
    "detail.nothing_sent": {"en": "Nothing was sent", "zh": "未发送任何内容"},
    "detail.may_be_sent": {
        "en": "It may have been sent: check the venue first",
        "zh": "可能已经发出：请先到交易场所核对",
    },
    # the text listener's one line outside its audiences: no data, not even help
    "text.not_set_up": {
        "en": "This chat is not set up for countersign.",
        "zh": "此会话未开通 countersign。",
    },
    # headlines: an operation's state in words (cards/vocabulary.py picks one)
    "headline.executing": {"en": "Confirmed — executing", "zh": "已确认 — 执行中"},
    "headline.rejected": {"en": "Rejected by {who}", "zh": "已被 {who} 拒绝"},
    "headline.rejected.reason": {
        "en": "Rejected by {who}: {reason}",
        "zh": "已被 {who} 拒绝：{reason}",
    },
    # an operation whose card never reached Lark (cards/vocabulary.py headline)
    "headline.lark_off": {
        "en": "Card not posted: Lark is off here (run --dev)",
        "zh": "卡片未发出：此处未启用飞书",
    },
    "headline.not_posted": {"en": "Card not posted", "zh": "卡片未发出"},
    "headline.expired": {"en": "Expired — nothing executed", "zh": "已过期 — 未执行"},
    "headline.cancelled": {
        "en": "Cancelled by the proposer — nothing executed",
        "zh": "发起方已取消 — 未执行",
    },
    "headline.changes_requested": {
        "en": "Sent back by {who} for changes — nothing sent",
        "zh": "已被 {who} 退回修改 — 未发送",
    },
    "headline.superseded": {
        "en": "Replaced by a newer draft — nothing sent",
        "zh": "已被更新的草稿取代 — 未发送",
    },
    # why an operation is in the dashboard's "Needs attention" view
    "attention.awaiting": {"en": "Awaiting confirmation", "zh": "待确认"},
    "attention.unknown": {"en": "Submission unknown", "zh": "提交结果未知"},
    "attention.unresolved": {"en": "Unresolved", "zh": "待人工核对"},
    "attention.card_failed": {"en": "Card not delivered", "zh": "卡片投递失败"},
    "attention.delivery_failed": {"en": "Result not delivered", "zh": "结果回传失败"},
    # lifecycle states as words (filters, tables, the CLI)
    "state.word.prepared": {"en": "posting card", "zh": "正在发卡片"},
    "state.word.awaiting_confirmation": {"en": "awaiting confirmation", "zh": "待确认"},
    "state.word.claimed": {"en": "confirmed", "zh": "已确认"},
    "state.word.outcome_observed": {"en": "concluded", "zh": "已有结果"},
    "state.word.rejected": {"en": "rejected", "zh": "已拒绝"},
    "state.word.cancelled": {"en": "cancelled", "zh": "已取消"},
    "state.word.expired": {"en": "expired", "zh": "已过期"},
    "state.word.superseded": {"en": "superseded", "zh": "已取代"},
    "state.word.changes_requested": {"en": "changes requested", "zh": "已要求修改"},
    # the card's own lines
    "card.proposed": {"en": "Proposed by {proposer}", "zh": "由 {proposer} 提交"},
    "card.proposed.for": {
        "en": "Proposed by {proposer} for {who}",
        "zh": "由 {proposer} 代 {who} 提交",
    },
    "card.why": {"en": "Why: {reason}", "zh": "理由：{reason}"},
    # absolute: a card is a static message, "in 59 min" would go stale on it
    "card.expires": {"en": "Expires at {at}", "zh": "{at} 过期"},
    "card.auto_send": {
        "en": "Sends itself at {at}, unless an operator decides first",
        "zh": "若无人先行处理，将于 {at} 自动发送",
    },
    # where a surface refreshes itself (the dashboard's ticking page, a CLI run): how long
    # that is from now, after the absolute time
    "relative.after": {"en": "{at} ({relative})", "zh": "{at}（{relative}）"},
    "relative.paren": {"en": "({relative})", "zh": "（{relative}）"},
    "card.footer": {
        "en": "Operation {id} · digest {digest} · {executor} r{revision}",
        "zh": "操作 {id} · 摘要 {digest} · {executor} r{revision}",
    },
    # the text listener's answers (bot/ingress/text.py)
    "text.pending.none": {
        "en": "Nothing is waiting for a decision.",
        "zh": "没有待决定的操作。",
    },
    "text.pending.head": {"en": "{count} waiting for a decision:", "zh": "{count} 个待决定："},
    "text.unknown": {
        "en": "No operation {id}. Try `pending`.",
        "zh": "没有操作 {id}。试试 `pending`。",
    },
    "yes": {"en": "yes", "zh": "是"},
    "no": {"en": "no", "zh": "否"},
}

LARK_LOCALE: Mapping[Lang, str] = {"en": "en_us", "zh": "zh_cn"}


def text(key: str, lang: Lang, **values: str) -> str:
    entry = TEXT.get(key)
    template = entry[lang] if entry else key.split(".", 1)[-1].replace("_", " ").capitalize()
    return template.format(**values)


# the words of a decision, by the button that made it: (its line, its toast, the line of the
# operator's words with it, as {reason}); Confirm else
DECISION_WORDS: Mapping[str, tuple[str, str, str]] = {
    "reject": ("state.rejected", "toast.rejected", "detail.reason"),
    "request_changes": ("state.changes_requested", "toast.changes_requested", "detail.note"),
}
CONFIRM_WORDS = ("state.claimed", "toast.confirmed", "detail.reason")


def decision_key(action: Any) -> str:
    """The catalogue key of "<decided> by {who} at {at}" for a decision's action."""
    return DECISION_WORDS.get(str(action), CONFIRM_WORDS)[0]


def toast_key(action: Any) -> str:
    """The catalogue key of the toast that answers an accepted decision's click."""
    return DECISION_WORDS.get(str(action), CONFIRM_WORDS)[1]


def reason_key(action: Any) -> str:
    """The catalogue key of the line that gives the operator's words ({reason}) with a
    decision: a reject's reason, a request's note."""
    return DECISION_WORDS.get(str(action), CONFIRM_WORDS)[2]


def i18n(key: str, suffix: str = "", **values: str) -> dict[str, str]:
    """Lark's local i18n map for a text: {"en_us": ..., "zh_cn": ...}."""
    return {LARK_LOCALE[lang]: text(key, lang, **values) + suffix for lang in LANGS}
