"""Example payloads of this kind, filed as shown against config.example.toml (destination
`acme`, the chat of counterparty `acme-supplier`)."""

from __future__ import annotations

from workers.domains.base import Example

EXAMPLES: tuple[Example, ...] = (
    Example(
        name="draft",
        summary="A note to Acme's chat, sent once an operator approves its exact text",
        payload={
            "destination": "acme",
            "counterparty": "acme-supplier",
            "text": "Hello Acme, we confirm the delivery window of Friday 10:00-12:00.",
            "priority": "P2",
        },
    ),
    Example(
        name="urgent-draft",
        summary="An urgent note: the priority is on the card, the text is still approved as is",
        payload={
            "destination": "acme",
            "counterparty": "acme-supplier",
            "text": "Hello Acme, please hold the 40 units: the Friday delivery moves to Monday.",
            "priority": "P1",
        },
    ),
)
