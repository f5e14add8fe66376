"""The catalogue's part for words stored in one language (cards/strings.py reads it into TEXT):
a term's enumerated value, an operation's title, and the reasons and hints the executor and
the pre-check record. They stay as stored (the projection and outcome digests bind them);
each surface words them at render time (cards/stored_words.py). An entry's en is the stored
text itself (its {values} read back from it), so English reads exactly as stored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

STORED_TEXT: Mapping[str, Mapping[Literal["en", "zh"], str]] = {
    # a term's value, matched by its term's name and its en (the value as filed)
    "value.side.buy": {"en": "buy", "zh": "买入"},
    "value.side.sell": {"en": "sell", "zh": "卖出"},
    "value.order_type.limit": {"en": "limit", "zh": "限价"},
    "value.order_type.market": {"en": "market", "zh": "市价"},
    "value.time_in_force.gtc": {"en": "GTC", "zh": "撤销前有效"},
    "value.time_in_force.ioc": {"en": "IOC", "zh": "立即成交否则撤销"},
    "value.time_in_force.fok": {"en": "FOK", "zh": "全部成交否则撤销"},
    "value.time_in_force.post_only": {"en": "POST_ONLY", "zh": "只做挂单"},
    "value.network.emulator": {"en": "emulator", "zh": "仿真器"},
    "value.network.mainnet": {"en": "mainnet", "zh": "主网"},
    "value.network.testnet": {"en": "testnet", "zh": "测试网"},
    "value.idempotent.retried": {
        "en": "idempotent: retried with the same key",
        "zh": "幂等：以同一键重试",
    },
    "value.idempotent.not_retried": {
        "en": "not idempotent: never sent twice (checked by status, else by a person)",
        "zh": "非幂等：绝不发送两次（按状态核对，否则由人核对）",
    },
    # an operation's title in another language, from its terms (en: the stored title)
    "title.finance.order": {
        "en": "{SIDE} {quantity} {instrument}",
        "zh": "{side} {quantity} {instrument}",
    },
    "title.message.send": {
        "en": "Message to {counterparty} ({priority})",
        "zh": "发给 {counterparty} 的消息（{priority}）",
    },
    # the pre-check's refusals (workers/domains/finance/preflight.py), by code
    "said.observation_incomplete": {
        "en": "the venue could not report the whole account",
        "zh": "交易场所未能报告完整的账户",
    },
    "said.observation_stale": {
        "en": "the account observation is too old",
        "zh": "账户观测数据过旧",
    },
    "said.unsupported_mode": {
        "en": "account mode {mode} is not supported",
        "zh": "不支持账户模式 {mode}",
    },
    "said.unknown_instrument": {
        "en": "{instrument} is not listed on the venue",
        "zh": "{instrument} 未在交易场所上市",
    },
    "said.leverage_mismatch": {
        "en": "the account is set to {set_to}x on {instrument}, not the confirmed "
        "{leverage}x; countersign never changes leverage as a side effect",
        "zh": "账户在 {instrument} 上的杠杆为 {set_to} 倍，而非确认的 {leverage} 倍；"
        "countersign 从不顺带修改杠杆",
    },
    "said.reduce_only_would_increase": {
        "en": "a reduce-only order larger than the position it reduces",
        "zh": "只减仓订单大于其所减的持仓",
    },
    "said.price_too_precise": {
        "en": "limit price {price} has more than {figures} significant figures, which the "
        "venue refuses (a whole number is always taken); it is never rounded",
        "zh": "限价 {price} 的有效数字超过 {figures} 位，交易场所不接受（整数总被接受）；"
        "价格从不取整",
    },
    "said.protective_too_precise": {
        "en": "{name} {price} has more than {figures} significant figures, which the venue "
        "refuses; it is never rounded",
        "zh": "{name} {price} 的有效数字超过 {figures} 位，交易场所不接受；价格从不取整",
    },
    "said.market_unpriceable": {
        "en": "no price the venue takes lies within {bps} bps of the mark {mark}, so the "
        "market order cannot be sent inside its bound",
        "zh": "标记价 {mark} 的 {bps} 个基点内没有交易场所接受的价格，市价单无法在其限度内发送",
    },
    "said.below_minimum_notional": {
        "en": "quantity {quantity} at {price} is worth less than the venue's minimum of "
        "{minimum} per order; it is never rounded up",
        "zh": "数量 {quantity}、价格 {price} 的价值低于交易场所每单最低 {minimum}；数量从不向上取整",
    },
    "said.quantity_off_lot": {
        "en": "quantity {quantity} is not a multiple of the lot {lot}",
        "zh": "数量 {quantity} 不是最小数量单位 {lot} 的整数倍",
    },
    "said.below_minimum": {
        "en": "quantity {quantity} is below the minimum {minimum}",
        "zh": "数量 {quantity} 低于最小值 {minimum}",
    },
    "said.price_off_tick": {
        "en": "limit price {price} is not a multiple of the tick {tick}",
        "zh": "限价 {price} 不是最小价格单位 {tick} 的整数倍",
    },
    "said.protective_off_tick": {
        "en": "{name} {price} is not a multiple of the tick {tick}",
        "zh": "{name} {price} 不是最小价格单位 {tick} 的整数倍",
    },
    "said.leverage_above_max": {
        "en": "leverage {leverage} is above the venue's {maximum}",
        "zh": "杠杆 {leverage} 高于交易场所上限 {maximum}",
    },
    "said.fee_currency_mismatch": {
        "en": "fees are charged in {currency}, not {asked}",
        "zh": "手续费以 {currency} 收取，而非 {asked}",
    },
    "said.fee_cap_too_low": {
        "en": "the fee could reach {fee}, above the confirmed cap {cap}",
        "zh": "手续费可能达到 {fee}，高于确认的上限 {cap}",
    },
    "said.budget_exceeded": {
        "en": "exposure budget of {account} is {budget}: positions and open orders "
        "{observed} + reserved {held} + this order {amount} exceed it",
        "zh": "{account} 的风险敞口预算为 {budget}：持仓和挂单 {observed} + 已预留 {held} + "
        "本单 {amount} 超出预算",
    },
    # the executor's own (workers/executor.py)
    "said.executor_missing": {
        "en": "no executor for {kind} in this build",
        "zh": "此版本没有 {kind} 的执行器",
    },
    "said.domain_disabled": {
        "en": "{kind} is disabled in the configuration; nothing was sent",
        "zh": "配置中已停用 {kind}；未发送任何内容",
    },
    "said.bot_stopped": {
        "en": "the bot stopped while the order was being sent",
        "zh": "订单发送期间机器人停止了运行",
    },
    "said.timeout": {"en": "TimeoutError", "zh": "等待应答超时"},
    "said.nobody_received": {
        "en": "nobody received this client id",
        "zh": "没有任何一方收到此客户端编号",
    },
    "said.never_land": {
        "en": "the venue proved the order can never land",
        "zh": "交易场所已证实该订单不可能成交",
    },
    # a policy version's change lines (bot/config/policy_document.py), as the ledger keeps them
    "said.first_policy": {"en": "first policy recorded", "zh": "首次记录的策略"},
    "said.policy_scheme": {
        "en": "policy scheme {before} → {after}",
        "zh": "策略格式 {before} → {after}",
    },
    # the pieces of a change line ("audience ops: operators: added Bob (ou_bob)"): where,
    # which setting (a config key; one without an entry reads as typed), what happened
    "policy.where.audience": {"en": "audience {name}", "zh": "审批群 {name}"},
    "policy.where.rule": {"en": "rule {name}", "zh": "规则 {name}"},
    "policy.where.proposer": {"en": "proposer {name}", "zh": "发起方 {name}"},
    "policy.where.domain": {"en": "[domains.{name}]", "zh": "领域配置 [domains.{name}]"},
    "policy.where.operations": {"en": "operations", "zh": "操作"},
    "policy.where.second_look": {"en": "second look", "zh": "二次确认"},
    "policy.key.chat_id": {"en": "chat_id", "zh": "群聊 ID"},
    "policy.key.operators": {"en": "operators", "zh": "操作员"},
    "policy.key.required_confirmations": {"en": "required_confirmations", "zh": "所需确认数"},
    "policy.key.allow_self_approval": {"en": "allow_self_approval", "zh": "允许自我确认"},
    "policy.key.escalate_to": {"en": "escalate_to", "zh": "升级至"},
    "policy.key.remind_before_s": {"en": "remind_before_s", "zh": "提前提醒（秒）"},
    "policy.key.delegation_max_days": {"en": "delegation_max_days", "zh": "最长委托天数"},
    "policy.key.order": {"en": "order", "zh": "顺序"},
    "policy.key.audiences": {"en": "audiences", "zh": "审批群"},
    "policy.key.kinds": {"en": "kinds", "zh": "类型"},
    "policy.key.above": {"en": "above", "zh": "金额阈值"},
    "policy.key.currency": {"en": "currency", "zh": "币种"},
    "policy.key.reply_chats": {"en": "reply_chats", "zh": "回复群聊"},
    "policy.key.default_expires_in_s": {"en": "default_expires_in_s", "zh": "默认有效期（秒）"},
    "policy.key.max_expires_in_s": {"en": "max_expires_in_s", "zh": "最长有效期（秒）"},
    "policy.key.within_s": {"en": "within_s", "zh": "时限（秒）"},
    "policy.added": {"en": "added {value}", "zh": "新增 {value}"},
    "policy.removed_value": {"en": "removed {value}", "zh": "移除 {value}"},
    "policy.removed": {"en": "removed", "zh": "已移除"},
    "policy.value.none": {"en": "none", "zh": "无"},
    "policy.value.true": {"en": "true", "zh": "是"},
    "policy.value.false": {"en": "false", "zh": "否"},
    # what to do next (a refusal's hint)
    "hint.corrected_order": {
        "en": "propose a new order with corrected terms",
        "zh": "以更正后的条款重新提交订单",
    },
    "hint.corrected": {
        "en": "propose a new operation with corrected terms",
        "zh": "以更正后的条款重新提交操作",
    },
    "hint.venue_answers": {
        "en": "try again once the venue answers fully; nothing was sent",
        "zh": "待交易场所完整应答后重试；未发送任何内容",
    },
    "hint.retry": {"en": "retry", "zh": "重试"},
    "hint.leverage": {
        "en": "change the leverage to {leverage}x on the venue, or propose the order at {set_to}x",
        "zh": "在交易场所将杠杆改为 {leverage} 倍，或以 {set_to} 倍重新提交订单",
    },
    "hint.minimum": {
        "en": "propose at least the minimum; the quantity is never rounded up",
        "zh": "至少提交最小数量；数量从不向上取整",
    },
    "hint.price": {
        "en": "propose a new order at a price the venue takes",
        "zh": "以交易场所接受的价格重新提交订单",
    },
    "hint.protective": {
        "en": "propose a new order with protective prices the venue takes",
        "zh": "以交易场所接受的止损止盈价格重新提交订单",
    },
    "hint.market": {
        "en": "propose a limit order, or a wider slippage bound",
        "zh": "改为限价单，或放宽滑点限度",
    },
    "hint.notional": {
        "en": "propose a new order worth at least the minimum",
        "zh": "重新提交价值不低于最低金额的订单",
    },
    "hint.fee": {
        "en": "propose with a higher max_fee or a smaller quantity",
        "zh": "提高最高手续费或减少数量后重新提交",
    },
    "hint.revision": {
        "en": "propose it again so operators confirm what this build runs",
        "zh": "请重新提交，让操作员确认此版本所执行的内容",
    },
    "hint.enable": {
        "en": "enable the domain and propose again",
        "zh": "启用该领域后重新提交",
    },
    "hint.budget": {
        "en": "wait for open orders to settle, or propose a smaller order",
        "zh": "等待挂单结算，或提交更小的订单",
    },
}
