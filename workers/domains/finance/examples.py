"""Example payloads of this kind, filed as shown against config.example.toml (account
`sim-main` on the simulated venue, whose default instruments are BTC-PERP and ETH-PERP)."""

from __future__ import annotations

from workers.domains.base import Example

# a limit buy of 0.010 BTC-PERP at the simulated venue's default mark (the demo's orders
# are this one with changes)
LIMIT_BUY: dict[str, object] = {
    "venue": "sim",
    "account": "sim-main",
    "instrument": "BTC-PERP",
    "side": "buy",
    "quantity": "0.010",
    "order_type": "limit",
    "limit_price": "60000",
    "time_in_force": "GTC",
    "reduce_only": False,
    "leverage": "2",
    "max_fee": "1.5",
    "fee_currency": "USDC",
}

EXAMPLES: tuple[Example, ...] = (
    Example(
        name="limit-buy",
        summary="Buy 0.010 BTC-PERP at 60000 or better, with a protective stop at 57000",
        payload={**LIMIT_BUY, "protective": {"stop_loss": "57000"}},
    ),
    Example(
        name="market-sell",
        summary="Sell 0.10 ETH-PERP at the market, at most 50 bps below the mark, now or never",
        payload={
            "venue": "sim",
            "account": "sim-main",
            "instrument": "ETH-PERP",
            "side": "sell",
            "quantity": "0.10",
            "order_type": "market",
            "max_slippage_bps": "50",
            "time_in_force": "IOC",
            "reduce_only": False,
            "leverage": "1",
            "max_fee": "0.5",
            "fee_currency": "USDC",
        },
    ),
)
