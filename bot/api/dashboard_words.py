"""The dashboard's own labels (column headers, section names, its records' states) in en/zh,
and the small values its pages are made of: a time (absolute, in the display zone and named;
how long from now only on a page that refreshes itself), an id cut short (whole on hover), a
chip's colour. Pure.

Every status, protective-order word, person, number and date an operation shows comes from
the one catalogue (`cards/strings.py`, through `cards/vocabulary.py`), and a kind's own words
(its headlines, term labels, outcome words) from the data, as on the card; only words no
other surface says live here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from bot.api.web_words import WEB_LABELS
from cards.strings import Lang, text
from cards.vocabulary import relative, when

LABELS: Mapping[str, Mapping[Lang, str]] = {
    "brand": {"en": "countersign", "zh": "countersign"},
    "nav.attention": {"en": "Needs attention", "zh": "需要处理"},
    "nav.all": {"en": "All operations", "zh": "全部操作"},
    "nav.policy": {"en": "Policy", "zh": "策略"},
    "nav.delegations": {"en": "Delegations", "zh": "委托"},
    "delegations.title": {"en": "Delegations", "zh": "审批委托"},
    "delegations.intro": {
        "en": "An operator's approval right, handed to another person for a while: they may "
        "decide that audience's operations for the operator until then, also on cards already "
        "posted. A quorum counts each person once. Ending one takes effect at once.",
        "zh": "操作员将审批权在一段时间内委托给他人：受托人在此期间可代其决定该审批群的操作，"
        "包括已发出的卡片。法定人数中每人只计一次。结束委托立即生效。",
    },
    "delegations.none": {"en": "No delegation is in force.", "zh": "当前没有生效的委托。"},
    "delegations.delegate": {"en": "Delegate", "zh": "受托人"},
    "delegations.for": {"en": "For", "zh": "委托人"},
    "delegations.until": {"en": "Until", "zh": "截止"},
    "delegations.by": {"en": "Granted by", "zh": "授予者"},
    "delegations.end": {"en": "End now", "zh": "立即结束"},
    "delegations.grant": {"en": "Hand on your right", "zh": "委托您的审批权"},
    "delegations.days": {"en": "Days", "zh": "天数"},
    "delegations.hand_on": {"en": "Delegate", "zh": "委托"},
    "delegations.done.grant": {"en": "Delegated.", "zh": "已委托。"},
    "delegations.done.revoke": {"en": "Ended.", "zh": "已结束。"},
    "policy.title": {"en": "Policy history", "zh": "策略历史"},
    "policy.intro": {
        "en": "Each version of the approval policy the bot started under, newest first: "
        "what changed, when and where it was read. An operation is confirmed only under "
        "the version its card was posted under.",
        "zh": "机器人启动时所用审批策略的每个版本，最新在前：变更内容、时间与读取位置。"
        "操作只能在其卡片发出时的策略版本下确认。",
    },
    "policy.none": {"en": "No policy recorded yet.", "zh": "尚无策略记录。"},
    "policy.version": {"en": "version {seq}", "zh": "第 {seq} 版"},
    "policy.recorded": {"en": "Recorded by", "zh": "记录者"},
    "policy.digest": {"en": "Policy digest", "zh": "策略摘要"},
    "policy.changes": {"en": "What changed", "zh": "变更内容"},
    "policy.audiences": {"en": "Audience digests", "zh": "审批群摘要"},
    "policy.unversioned": {
        "en": "filed before policy versions were kept",
        "zh": "提交于策略版本记录之前",
    },
    "policy.changed_at": {"en": "{at}: {lines}", "zh": "{at}：{lines}"},
    "recent": {"en": "Recent activity", "zh": "最近动态"},
    "calm": {"en": "Nothing needs attention.", "zh": "暂无需要处理的操作。"},
    "shown": {"en": "showing {shown} of {count}", "zh": "显示 {count} 条中的 {shown} 条"},
    "more": {"en": "All operations →", "zh": "全部操作 →"},
    "older": {"en": "Older →", "zh": "更早 →"},
    "none": {"en": "None", "zh": "无"},
    "colon": {"en": ": ", "zh": "："},
    "nothing.found": {"en": "No operation matches.", "zh": "没有符合条件的操作。"},
    "searched_to": {
        "en": "Looked through the operations created back to",
        "zh": "已查找的操作最早创建于",
    },
    "searched_on": {"en": "older ones on the next page.", "zh": "更早的在下一页。"},
    "filter.state": {"en": "State", "zh": "状态"},
    "filter.outcome": {"en": "Outcome", "zh": "结果"},
    "filter.any_state": {"en": "any state", "zh": "任意状态"},
    "filter.any_outcome": {"en": "any outcome", "zh": "任意结果"},
    "filter.search": {"en": "Search", "zh": "搜索"},
    "filter.placeholder": {
        "en": "id, instrument, counterparty",
        "zh": "ID、合约、对方",
    },
    "filter.go": {"en": "Show", "zh": "筛选"},
    "filter.clear": {"en": "Clear", "zh": "清除"},
    "col.operation": {"en": "Operation", "zh": "操作"},
    "col.what": {"en": "What", "zh": "内容"},
    "col.state": {"en": "State", "zh": "状态"},
    "col.proposer": {"en": "Proposer", "zh": "提交方"},
    "col.created": {"en": "Created", "zh": "创建"},
    "col.updated": {"en": "Updated", "zh": "更新"},
    "col.term": {"en": "Term", "zh": "条款项"},
    "col.value": {"en": "Value", "zh": "值"},
    "col.stage": {"en": "Stage", "zh": "阶段"},
    "col.result": {"en": "Result", "zh": "结果"},
    "col.details": {"en": "Details", "zh": "详情"},
    "col.when": {"en": "When", "zh": "时间"},
    "col.who": {"en": "Who", "zh": "操作员"},
    "col.button": {"en": "Button", "zh": "按钮"},
    "col.client_id": {"en": "Client id", "zh": "客户端 ID"},
    "col.execution": {"en": "Execution", "zh": "执行"},
    "col.sent": {"en": "Sent", "zh": "发送时间"},
    "col.resolved": {"en": "Resolved", "zh": "完成时间"},
    "col.error": {"en": "Error", "zh": "错误"},
    "col.action": {"en": "Action", "zh": "动作"},
    "col.version": {"en": "Version", "zh": "版本"},
    "col.delivery": {"en": "Delivery", "zh": "投递"},
    "col.channel": {"en": "Channel", "zh": "渠道"},
    "col.attempts": {"en": "Attempts", "zh": "尝试次数"},
    "col.digest": {"en": "Digest", "zh": "摘要"},
    "section.terms": {"en": "Terms", "zh": "条款"},
    "section.outcomes": {"en": "Outcomes", "zh": "结果"},
    "section.clicks": {"en": "Clicks", "zh": "点击记录"},
    "section.attempt": {"en": "Attempt", "zh": "提交"},
    "section.cards": {"en": "Card deliveries", "zh": "卡片投递"},
    "section.deliveries": {"en": "Result deliveries", "zh": "结果回传"},
    "section.record": {"en": "Record", "zh": "记录"},
    "fact.kind": {"en": "Kind", "zh": "类型"},
    "fact.executor": {"en": "Executor", "zh": "执行器"},
    "fact.digest": {"en": "Confirm digest", "zh": "确认摘要"},
    "fact.audience": {"en": "Audience", "zh": "审批群"},
    "fact.request": {"en": "Request id", "zh": "请求 ID"},
    "fact.entry": {"en": "Decided on", "zh": "决定入口"},
    # a draft that answers an inbound message: inbound -> drafted -> sent
    "fact.signal": {"en": "Answers", "zh": "回复"},
    "fact.policy": {"en": "Policy", "zh": "策略"},
    "fact.policy_changed": {"en": "Changed in version {seq}", "zh": "第 {seq} 版变更"},
    "timeline.inbound": {"en": "{id} from {who} at {at}", "zh": "{who} 于 {at} 发来 {id}"},
    "timeline.drafted": {"en": "drafted {span} later", "zh": "{span}后起草"},
    "timeline.sent": {"en": "sent {span} after the draft", "zh": "起草后{span}发送"},
    "entry.lark": {"en": "the Lark card", "zh": "飞书卡片"},
    "entry.web": {"en": "the web", "zh": "网页"},
    "entry.auto": {"en": "the clock (time-boxed auto-send)", "zh": "时限自动发送"},
    # Confirm and Reject on the page (bot/api/web_decide.py)
    "decide.title": {"en": "Your decision", "zh": "您的决定"},
    "decide.digest": {
        "en": "Digest {digest}: the card shows the same",
        "zh": "摘要 {digest}：与卡片所示一致",
    },
    "decide.reauth": {
        "en": "Confirming this needs a sign-in from the last {minutes} min.",
        "zh": "确认此操作需要在最近 {minutes} 分钟内登录。",
    },
    "decide.sign_in_again": {"en": "Sign in again", "zh": "重新登录"},
    # the newest of a person's refused posts on one operation, and how many there were
    "click.refused_times": {
        "en": "{words} · refused \u00d7{count}",  # the multiplication sign
        "zh": "{words} · 已拒绝 \u00d7{count}",
    },
    # the browser's dialog before a Confirm is posted: a second look, and no one-click confirm
    "decide.ask": {
        "en": "Confirm {title}?\n\nDigest {digest} (the card shows the same). Once confirmed "
        "it runs; this cannot be undone.",
        "zh": "确认 {title}?\n\n摘要 {digest}（与卡片所示一致）。确认后将执行，无法撤销。",
    },
    "ok": {"en": "ok", "zh": "成功"},
    "failed": {"en": "failed", "zh": "失败"},
    "not_found": {"en": "Not found", "zh": "未找到"},
    "not_found.operation": {"en": "There is no operation {id}.", "zh": "没有操作 {id}。"},
    "not_found.page": {"en": "This page does not exist.", "zh": "此页面不存在。"},
    # Sign in with Lark (bot/api/signin.py)
    "auth.sign_in": {"en": "Sign in with Lark", "zh": "使用飞书登录"},
    "auth.sign_out": {"en": "Sign out", "zh": "退出登录"},
    "auth.signed_in": {"en": "Signed in as", "zh": "当前登录"},
    "refused": {"en": "Not allowed", "zh": "无权访问"},
    "refused.tenant": {
        "en": "{name} is signed in from an organisation this dashboard does not serve.",
        "zh": "{name} 所在的组织无权查看此控制台。",
    },
    "refused.anonymous": {
        "en": "This dashboard answers people signed in with Lark, loopback clients, or its token.",
        "zh": "此控制台仅对已用飞书登录的成员、本机访问或持有令牌者开放。",
    },
    # the records' own states, which no card shows
    "execution.queued": {"en": "queued", "zh": "排队中"},
    "execution.preflight": {"en": "pre-checking", "zh": "预检中"},
    "execution.reserved": {"en": "budget reserved", "zh": "已预留额度"},
    "execution.dispatching": {"en": "sending", "zh": "发送中"},
    "execution.submitted": {"en": "submitted", "zh": "已提交"},
    "execution.submission_unknown": {"en": "submission unknown", "zh": "提交结果未知"},
    "execution.completed": {"en": "completed", "zh": "已完成"},
    "execution.reconciled": {"en": "reconciled", "zh": "已核对"},
    "execution.preflight_rejected": {"en": "refused by pre-check", "zh": "预检未通过"},
    "execution.reservation_refused": {"en": "over the budget", "zh": "超出预算"},
    "card.send": {"en": "posted", "zh": "已发送"},
    "card.patch": {"en": "updated", "zh": "已更新"},
    "card.callback": {"en": "answered with the click", "zh": "随点击返回"},
    "card.none": {"en": "nothing to show", "zh": "无需展示"},
    "channel.reply": {"en": "reply", "zh": "会话回复"},
    "channel.webhook": {"en": "webhook", "zh": "Webhook"},
    "channel.ops_chat": {"en": "filing receipt (ops chat)", "zh": "提交回执（内部群）"},
    "stage.initial": {"en": "initial", "zh": "初次"},
    "stage.reconciled": {"en": "reconciled", "zh": "核对"},
    "delivery.pending": {"en": "pending", "zh": "待投递"},
    "delivery.delivered": {"en": "delivered", "zh": "已投递"},
    "delivery.failed": {"en": "failed", "zh": "失败"},
    **WEB_LABELS,  # the web decision page's and the error pages' (bot/api/web_words.py)
}

# Lark's header template colours (cards/vocabulary.py's tones) as the dashboard's chip classes
TONES = frozenset(
    {"blue", "wathet", "turquoise", "green", "yellow", "orange", "red", "carmine", "grey"}
)


def label(key: str, lang: Lang, **values: str) -> str:
    """A dashboard label; an unknown one (a record state added later) reads as itself."""
    entry = LABELS.get(key)
    words = entry[lang] if entry else key.split(".", 1)[-1].replace("_", " ")
    return words.format(**values) if values else words


def tone_class(tone: str) -> str:
    return f"tone-{tone if tone in TONES else 'grey'}"


@dataclass(frozen=True)
class Now:
    """A page's times: the moment it is drawn, the display zone ([cards] timezone, as on the
    card), and whether the page refreshes itself (live.js's "ticking": only then may it say
    how long from now, which would go stale on a page that stays as it was drawn)."""

    at: datetime
    tz: tzinfo = UTC
    ticking: bool = False


def moment(iso: str | None, now: Now, lang: Lang) -> dict[str, Any] | None:
    """A time as a cell: the absolute time in the display zone, named ("2026-12-07 18:00
    CST"), then how long from now where the page ticks; the machine's ISO in `datetime`."""
    if not iso:
        return None
    absolute = when(iso, now.tz)
    cell: dict[str, Any] = {"time": iso, "text": absolute, "title": absolute}
    if now.ticking:  # beside the time, free to wrap (the time itself never does)
        cell["rel"] = text("relative.paren", lang, relative=relative(iso, now.at, lang))
    return cell


def ident(value: str, *, short: bool = False) -> dict[str, Any]:
    """An id as a cell: never wrapped, cut short where space is short (`short`: always, for
    digests), whole on hover."""
    return {"text": value, "title": value, "cls": "id short" if short else "id"}


def long_text(value: str) -> dict[str, Any]:
    """Free text (a reason, an error, a message): wraps where it must."""
    return {"text": value, "cls": "long"}
