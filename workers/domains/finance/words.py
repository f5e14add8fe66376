"""finance.order's words: the card's title and headlines, a label per term, and what each
outcome status says (words, tone, finality)."""

from __future__ import annotations

from collections.abc import Mapping

from store import Tone
from workers.domains.words import KindWords, Meaning, Said

WORDS = KindWords(
    title=Said("Confirm order", "确认下单"),
    waiting=Said("Order to confirm", "待确认订单"),
    partly=Said(
        "Order to confirm — {count} of {required} confirmed",
        "待确认订单 — 已确认 {count}/{required}",
    ),
    terms={
        "venue": Said("Venue", "交易场所"),
        "network": Said("Network", "网络"),
        "account": Said("Account", "账户"),
        "instrument": Said("Instrument", "合约"),
        "side": Said("Side", "方向"),
        "quantity": Said("Quantity", "数量"),
        "order_type": Said("Order type", "订单类型"),
        "limit_price": Said("Limit price", "限价"),
        "max_slippage_bps": Said("Max slippage (bps)", "最大滑点（基点）"),
        "time_in_force": Said("Time in force", "有效期"),
        "reduce_only": Said("Reduce only", "只减仓"),
        "leverage": Said("Leverage", "杠杆"),
        "max_fee": Said("Max fee", "最高手续费"),
        "stop_loss": Said("Stop loss", "止损"),
        "take_profit": Said("Take profit", "止盈"),
    },
)

# An order the venue still works (accepted, resting, partly filled) is not final: the
# executor keeps looking, and so does everyone waiting for `final`.
OUTCOMES: Mapping[str, Meaning] = {
    "accepted": Meaning(Said("Accepted by the venue", "交易所已接受"), Tone.GOOD, final=False),
    "resting": Meaning(Said("Resting on the book", "挂单中"), Tone.GOOD, final=False),
    "partially_filled": Meaning(Said("Partially filled", "部分成交"), Tone.GOOD, final=False),
    "filled": Meaning(Said("Filled", "已成交"), Tone.GOOD, final=True),
    "rejected": Meaning(Said("Rejected by the venue", "交易所已拒绝"), Tone.BAD, final=True),
    "cancelled": Meaning(Said("Cancelled at the venue", "交易所已撤单"), Tone.DONE, final=True),
}
