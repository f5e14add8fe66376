"""The chat's part of the catalogue (cards/strings.py reads it into TEXT): what the text
listener answers in a group or a direct chat, en and zh side by side."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

CHAT_TEXT: Mapping[str, Mapping[Literal["en", "zh"], str]] = {
    "text.help": {
        "en": (
            "countersign commands (mention me, or write to me directly):\n"
            "  help: this list\n"
            "  pending: operations waiting for a decision\n"
            "  status <id>: one operation\n"
            "  health: is the bot receiving clicks and text\n"
            "  delegate @person 3d | until DATE: hand your right in this chat's audience on\n"
            "  undelegate [@person]: end yours now; delegations: those in force\n"
            "Decisions are made only with the buttons on a card, never by text."
        ),
        "zh": (
            "countersign 指令（@我，或直接私聊我）：\n"
            "  help：本列表\n"
            "  pending：等待决定的操作\n"
            "  status <编号>：查看一个操作\n"
            "  health：机器人能否收到卡片点击和文字\n"
            "  delegate @某人 3d | until 日期：把你在本会话受众中的决定权交给他人\n"
            "  undelegate [@某人]：立即收回；delegations：查看生效中的委托\n"
            "决定只能通过卡片上的按钮做出，不能用文字。"
        ),
    },
    # `health`: the bot's readiness as /readyz reports it, in words
    "text.health.overall": {"en": "Overall: {status}", "zh": "总体：{status}"},
    "text.health.line": {"en": "{component}: {state}", "zh": "{component}：{state}"},
    "health.component.store": {"en": "store", "zh": "数据库"},
    "health.component.callback_consumer": {"en": "card clicks", "zh": "卡片点击"},
    "health.component.text_listener": {"en": "text commands", "zh": "文字指令"},
    "health.component.outbox": {"en": "cards to send", "zh": "待发卡片"},
    "health.component.executor": {"en": "executor", "zh": "执行器"},
    "health.component.deliveries": {"en": "results returned", "zh": "结果回传"},
    "health.component.attention": {"en": "needs a person", "zh": "需要人工处理"},
    "health.component.due_listener": {"en": "wake-ups", "zh": "唤醒通知"},
    "health.state.ready": {"en": "ready", "zh": "就绪"},
    "health.state.unavailable": {"en": "unavailable", "zh": "不可用"},
    "health.state.ok": {"en": "ok", "zh": "正常"},
    "health.state.off": {"en": "off", "zh": "未启用"},
    "health.state.unknown": {"en": "unknown", "zh": "未知"},
    "health.state.verified": {"en": "verified", "zh": "已验证"},
    "health.state.listening": {"en": "listening", "zh": "监听中"},
    "health.state.listening_unverified": {
        "en": "listening, not yet verified by a click",
        "zh": "监听中，尚未经点击验证",
    },
    "health.state.connected": {"en": "connected", "zh": "已连接"},
    "health.state.connecting": {"en": "connecting", "zh": "连接中"},
    "health.state.reconnecting": {"en": "reconnecting", "zh": "重新连接中"},
    "health.state.disconnected": {"en": "disconnected", "zh": "已断开"},
    "health.state.down": {"en": "down", "zh": "中断"},
    "health.state.starting": {"en": "starting", "zh": "启动中"},
    "health.state.running": {"en": "running", "zh": "运行中"},
    "health.state.stopped": {"en": "stopped", "zh": "已停止"},
    "health.state.needs_attention": {"en": "needs attention", "zh": "需要处理"},
    "health.state.delivery_failed": {"en": "a delivery failed", "zh": "有回传失败"},
    # delegation by text (bot/ingress/text_delegation.py)
    "text.delegation.usage": {
        "en": (
            "delegate: `delegate @person 3d` (days, or hours: 12h) or `delegate @person until "
            "2026-12-10`; `undelegate [@person]` ends yours now; `delegations` lists them."
        ),
        "zh": (
            "用法：`delegate @某人 3d`（天数，或小时：12h）或 `delegate @某人 until "
            "2026-12-10`；`undelegate [@某人]` 立即收回；`delegations` 列出生效中的委托。"
        ),
    },
    "text.delegation.described": {
        "en": "{who} for {whom} until {at} ({id})",
        "zh": "{who} 代 {whom}，至 {at}（{id}）",
    },
    "text.delegation.not_here": {
        "en": "Delegation is by audience: write this in the audience's own chat.",
        "zh": "委托按受众进行：请在该受众自己的会话中发送。",
    },
    "text.delegation.none": {
        "en": "No delegations in force in {audience}.",
        "zh": "{audience} 没有生效中的委托。",
    },
    "text.delegation.listed": {
        "en": "Delegations in force in {audience}:",
        "zh": "{audience} 生效中的委托：",
    },
    "text.delegation.none_yours": {
        "en": "You have no delegation in force in {audience}.",
        "zh": "你在 {audience} 没有生效中的委托。",
    },
    "text.delegation.ended": {"en": "Ended now:", "zh": "已立即结束："},
    "text.delegation.name_one": {
        "en": "Name exactly one person to hand your right to. {usage}",
        "zh": "请只 @ 一位接受委托的人。{usage}",
    },
    "text.delegation.how_long": {
        "en": "Say for how long. {usage}",
        "zh": "请说明委托多久。{usage}",
    },
    "text.delegation.other_tenant": {
        "en": "You can hand your right only to someone of this organisation.",
        "zh": "只能把决定权交给本组织的成员。",
    },
    "text.delegation.refused": {"en": "Not delegated: {problems}", "zh": "未委托：{problems}"},
    "text.delegation.granted": {
        "en": (
            "Delegated: {described}. They may decide {audience}'s operations for you until "
            "then, also on cards already posted; `undelegate` ends it now."
        ),
        "zh": (
            "已委托：{described}。在此之前，对方可代你决定 {audience} 的操作，"
            "包括已发出的卡片；`undelegate` 可立即收回。"
        ),
    },
    # why a delegation may not be granted (bot/config/delegation.py): reason, then fix
    "delegation.problem.no_audience": {
        "en": "no audience {audience!r}",
        "zh": "没有受众 {audience!r}",
    },
    "delegation.fix.no_audience": {"en": "use one of {known}", "zh": "请使用其中之一：{known}"},
    "delegation.problem.not_allowed": {
        "en": "{audience} allows no delegation",
        "zh": "{audience} 不允许委托",
    },
    "delegation.fix.not_allowed": {
        "en": "set delegation_max_days on [[audiences]] {audience} to allow it",
        "zh": "管理员可在 [[audiences]] {audience} 上设置 delegation_max_days 以允许委托",
    },
    "delegation.problem.not_an_operator": {
        "en": "{person} is not an operator of {audience}",
        "zh": "{person} 不是 {audience} 的操作员",
    },
    "delegation.fix.not_an_operator": {
        "en": "only an operator's own right can be handed on",
        "zh": "只能转交操作员本人的决定权",
    },
    "delegation.problem.not_an_open_id": {
        "en": "not a Lark open id",
        "zh": "不是飞书 open_id",
    },
    "delegation.fix.not_an_open_id": {
        "en": "give the person's ou_… id",
        "zh": "请给出对方的 ou_… 编号",
    },
    "delegation.problem.oneself": {
        "en": "a right cannot be handed to oneself",
        "zh": "不能把决定权交给自己",
    },
    "delegation.fix.oneself": {"en": "name another", "zh": "请指定他人"},
    "delegation.problem.not_the_holder": {
        "en": "only the holder may hand on their right",
        "zh": "只有决定权的持有人可以转交",
    },
    "delegation.fix.not_the_holder": {"en": "ask an admin", "zh": "请联系管理员"},
    "delegation.problem.past": {"en": "is not in the future", "zh": "不是将来的时间"},
    "delegation.fix.past": {"en": "give a later end", "zh": "请给出更晚的结束时间"},
    "delegation.problem.too_long": {
        "en": "is more than {days} days away",
        "zh": "超过 {days} 天",
    },
    "delegation.fix.too_long": {
        "en": "{audience} allows at most {days} days",
        "zh": "{audience} 最多允许 {days} 天",
    },
}
