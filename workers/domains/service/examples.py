"""Example payloads of this kind, filed as shown against config.example.toml (the `billing`
service and its `refund` action)."""

from __future__ import annotations

from workers.domains.base import Example

REFUND = {
    "service": "billing",
    "action": "refund",
    "arguments": {"order_id": "ord_1042", "amount": "120.00", "reason": "damaged"},
}

EXAMPLES: tuple[Example, ...] = (
    Example(
        "refund",
        "Refund 120.00 USD on order ord_1042 through the billing service",
        REFUND,
    ),
)

# The refund action's arguments, as config.example.toml and the demo declare them: the
# amount is a decimal string marked as the amount (approval rules by amount apply to it).
REFUND_ARGUMENTS: dict[str, object] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["order_id", "amount", "reason"],
    "properties": {
        "order_id": {
            "type": "string",
            "title": "Order",
            "x-title-zh": "订单",
            "pattern": "^ord_[A-Za-z0-9]{1,32}$",
        },
        "amount": {
            "type": "string",
            "format": "decimal",
            "title": "Refund amount",
            "x-title-zh": "退款金额",
            "x-amount": True,
            "x-currency": "USD",
            "x-minimum": "0.01",
            "x-maximum": "5000",
        },
        "reason": {
            "type": "string",
            "title": "Reason",
            "x-title-zh": "原因",
            "enum": ["damaged", "late", "duplicate_charge", "goodwill"],
        },
    },
}
