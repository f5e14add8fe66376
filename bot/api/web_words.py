"""The web decision page's and the error pages' own words in en/zh: the decision panel, why
a person may not decide, who confirmed and where, and what each error page says next. Pure.

The dashboard's labels (`bot/api/dashboard_words.py`) read these too, so a page's template
asks `label(...)` for all of them; refusals keep their words in the one catalogue
(`cards/strings.py` REFUSALS).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, tzinfo

from cards.strings import Lang
from cards.vocabulary import person, when
from store import Entry, OperationView

WEB_LABELS: Mapping[str, Mapping[Lang, str]] = {
    # the decision panel
    "panel.why_not": {"en": "Why you cannot decide", "zh": "您无法决定的原因"},
    "panel.sign_in": {
        "en": "Sign in with Lark to confirm or reject this operation.",
        "zh": "使用飞书登录后即可确认或拒绝此操作。",
    },
    "panel.reject_only": {
        "en": "You may still reject it.",
        "zh": "您仍可拒绝此操作。",
    },
    # who confirmed, and where
    "section.confirmers": {"en": "Confirmations", "zh": "确认记录"},
    "confirmers.none": {"en": "Nobody has confirmed yet.", "zh": "尚无人确认。"},
    "confirmers.progress": {
        "en": "{count} of {required} confirmed",
        "zh": "已确认 {count}/{required}",
    },
    "confirmer.web": {"en": "{who} on the web at {at}", "zh": "{who} 于 {at} 在网页上确认"},
    "confirmer.lark": {
        "en": "{who} on the Lark card at {at}",
        "zh": "{who} 于 {at} 在飞书卡片上确认",
    },
    "confirmer.for": {"en": "{who}, for {whom}", "zh": "{who}（代 {whom}）"},
    "section.history": {"en": "History", "zh": "历史记录"},
    # error pages: the title per status, and the ways on
    "error.400": {"en": "This request could not be read", "zh": "无法读取此请求"},
    "error.403": {"en": "Not allowed", "zh": "无权操作"},
    "error.404": {"en": "Not found", "zh": "未找到"},
    "error.405": {"en": "Not allowed here", "zh": "此处不允许该操作"},
    "error.409": {"en": "Already changed", "zh": "状态已变化"},
    "error.413": {"en": "Too large", "zh": "请求过大"},
    "error.421": {"en": "Wrong address", "zh": "地址不符"},
    "error.429": {"en": "Too many requests", "zh": "请求过于频繁"},
    "error.500": {"en": "Something went wrong", "zh": "出现错误"},
    "error.502": {"en": "Lark did not answer as expected", "zh": "飞书未按预期响应"},
    "error.other": {"en": "Not done", "zh": "未完成"},
    "error.status": {"en": "HTTP {status}", "zh": "HTTP {status}"},
    "error.next": {"en": "What next", "zh": "下一步"},
    "next.sign_in": {"en": "Sign in with Lark again", "zh": "重新使用飞书登录"},
    "next.operation": {"en": "Back to the operation", "zh": "返回该操作"},
    "next.ops": {"en": "Needs attention", "zh": "需要处理"},
    "next.public": {"en": "Open the dashboard at {url}", "zh": "在 {url} 打开控制台"},
    "host.moved": {
        "en": "This dashboard is served at {url}: sign-in and its forms work there only. "
        "Nothing was recorded; open the page there and post again.",
        "zh": "此控制台的地址是 {url}：登录和表单只在该地址有效。未记录任何内容；"
        "请在该地址打开页面后重新提交。",
    },
    # the sign-in flow's refusals (bot/api/signin.py)
    "signin.not_started": {
        "en": "Sign-in failed: this sign-in was not started in this browser (or it was started "
        "at another address of this dashboard). Nobody was signed in; sign in again from the "
        "page you were on.",
        "zh": "登录失败：此次登录并非在此浏览器中发起（或在本控制台的其他地址发起）。"
        "未登录任何人；请从您所在的页面重新登录。",
    },
    "signin.expired": {
        "en": "Sign-in failed: this sign-in has expired or was used already. Sign in again.",
        "zh": "登录失败：此次登录已过期或已被使用。请重新登录。",
    },
    "signin.cancelled": {
        "en": "Sign-in failed: the sign-in was cancelled on Lark's page. Sign in again when "
        "you are ready.",
        "zh": "登录失败：您在飞书页面上取消了登录。准备好后请重新登录。",
    },
    "signin.no_code": {
        "en": "Sign-in failed: Lark sent no authorization code. Sign in again.",
        "zh": "登录失败：飞书未返回授权码。请重新登录。",
    },
    "signin.lark": {
        "en": "Sign-in failed: {why}. Sign in again in a moment.",
        "zh": "登录失败：{why}。请稍后重新登录。",
    },
    "signout.unreadable": {
        "en": "Not signed out: {why}. Reload the page and sign out there.",
        "zh": "未退出登录：{why}。请刷新页面后重新退出。",
    },
    "signout.foreign": {
        "en": "Not signed out: this sign-out form is not from this session. Reload the page "
        "and sign out there.",
        "zh": "未退出登录：此退出表单不属于当前会话。请刷新页面后重新退出。",
    },
    # a decision post refused before anything was written (bot/api/web_decide.py)
    "decide.refused": {
        "en": "Not decided: {why}. Nothing was recorded.",
        "zh": "未作决定：{why}。未记录任何内容。",
    },
    "decide.cross_origin": {
        "en": "this form was not posted from this dashboard",
        "zh": "此表单并非从本控制台提交",
    },
    "decide.signed_out": {
        "en": "sign in with Lark to decide (the session has ended)",
        "zh": "请使用飞书登录后再作决定（会话已结束）",
    },
    "decide.foreign_form": {
        "en": "this form is not from this session; reload the page",
        "zh": "此表单不属于当前会话；请刷新页面",
    },
    "decide.no_key": {
        "en": "this form has no key; reload the page",
        "zh": "此表单缺少标识；请刷新页面",
    },
    # a form whose body could not be read (bot/api/form_body.py), {kind} its content type
    "form.unreadable": {
        "en": "the form's body could not be read as {kind}; post the form again from the page",
        "zh": "无法按 {kind} 读取表单内容；请从页面重新提交表单",
    },
    "form.no_type": {"en": "no content type", "zh": "无内容类型"},
    # too many writes in a short time (bot/api/web_limits.py): what, from whom
    "rate.limited": {
        "en": "Too many {what} from {who} in a short time. Nothing was recorded. "
        "Wait {seconds} s, then try again.",
        "zh": "{who}在短时间内的{what}过多。未记录任何内容。请等待 {seconds} 秒后重试。",
    },
    "rate.sign-in starts": {"en": "sign-in starts", "zh": "登录请求"},
    "rate.decision posts": {"en": "decision posts", "zh": "提交"},
    "rate.address": {"en": "this address", "zh": "此地址"},
    "rate.person": {"en": "you", "zh": "您"},
    # a page the server failed to make (bot/api/middlewares.py)
    "error.internal": {
        "en": "An internal error stopped this page; nothing more was done. Reload it, or go "
        "back to the dashboard.",
        "zh": "内部错误中断了此页面；未执行任何其他操作。请刷新，或返回控制台。",
    },
    # the dashboard's search refused (bot/api/dashboard.py)
    "search.refused": {"en": "this search cannot be run", "zh": "无法执行此搜索"},
    "search.too_long": {
        "en": "longer than {max} characters",
        "zh": "超过 {max} 个字符",
    },
    "search.too_long.fix": {"en": "search for less", "zh": "请缩短搜索内容"},
    "search.control": {"en": "holds control characters", "zh": "含有控制字符"},
    "search.control.fix": {"en": "search for printable text", "zh": "请搜索可打印的文字"},
    # a delegation post refused (bot/api/web_delegation.py)
    "delegate.refused": {
        "en": "Not changed: {why}. Nothing was recorded.",
        "zh": "未更改：{why}。未记录任何内容。",
    },
    "delegate.signed_out": {
        "en": "sign in with Lark to delegate (the session has ended)",
        "zh": "请使用飞书登录后再委托（会话已结束）",
    },
    "delegate.tenant": {
        "en": "your organisation may not use this dashboard",
        "zh": "您所在的组织无权使用此控制台",
    },
    "delegate.action": {"en": "action: grant or revoke", "zh": "操作：授予或撤销"},
    "delegate.days": {"en": "days: a whole number of days", "zh": "天数：须为整数天"},
    "delegate.not_yours": {
        "en": "id: no delegation of yours by that id",
        "zh": "编号：没有该编号的属于您的委托",
    },
    "delegate.ended": {
        "en": "id: that delegation was already revoked or has ended",
        "zh": "编号：该委托已被撤销或已结束",
    },
    # an outcome status two kinds word differently, in the list's outcome filter
    "outcome.status.rejected": {"en": "Rejected", "zh": "被拒绝"},
}


def web_label(key: str, lang: Lang, **values: str) -> str:
    words = WEB_LABELS[key][lang]
    return words.format(**values) if values else words


def confirmer_words(
    view: OperationView, people: Mapping[str, str], lang: Lang, tz: tzinfo = UTC
) -> list[str]:
    """Each confirmer with where and when, oldest first: "Alice on the web at 2026-12-05
    08:30 UTC", "Bob on the Lark card at ..." (and whose right, where delegated). Confirmers
    the view names without a record (none today) are named alone."""
    approval = view.approval
    said = []
    for each in approval.confirmations:
        who = person(each.by, people)
        if right := approval.delegated.get(each.by):
            who = web_label("confirmer.for", lang, who=who, whom=person(right.on_behalf_of, people))
        key = "confirmer.web" if each.entry is Entry.WEB else "confirmer.lark"
        said.append(web_label(key, lang, who=who, at=when(each.at, tz)))
    recorded = {each.by for each in approval.confirmations}
    said += [person(by, people) for by in approval.confirmed_by if by not in recorded]
    return said
