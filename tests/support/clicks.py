"""Card clicks as Lark pushes them to our app, and the callback consumer that reads them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.ingress.callbacks import CallbackConsumer, CallbackSettings
from cards.render import callback_value
from store import Operation, Store, operation_view

APP_ID = "cli_countersign"
OUR_TENANT = "tenant_ours"
T0 = datetime(2025, 3, 1, 1, 30, tzinfo=UTC)


def card_action(
    value: Any,
    *,
    event_id: str = "ev_1",
    app_id: str = APP_ID,
    tenant_key: str = OUR_TENANT,
    operator: str = "ou_alice",
    operator_tenant: str = OUR_TENANT,
    chat_id: str = "oc_ops",
    message_id: str = "om_card",
    form_value: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A card.action.trigger envelope (schema 2.0) as Lark pushes it (`form_value`: the
    fields of the card form the clicked button submitted)."""
    envelope: dict[str, Any] = {
        "schema": "2.0",
        "header": {
            "event_id": event_id,
            "token": "v_token",
            "create_time": str(int(T0.timestamp() * 1_000_000)),
            "event_type": "card.action.trigger",
            "tenant_key": tenant_key,
            "app_id": app_id,
        },
        "event": {
            "operator": {
                "tenant_key": operator_tenant,
                "user_id": "u_1",
                "open_id": operator,
                "union_id": "on_1",
            },
            "token": "c-token",
            "action": {"value": value, "tag": "button", "name": ""},
            "host": "im_message",
            "context": {"open_message_id": message_id, "open_chat_id": chat_id},
        },
    }
    if form_value is not None:
        envelope["event"]["action"]["form_value"] = form_value
    return envelope


def click_on(
    op: Operation, event_id: str, operator: str = "ou_alice", action: str = "confirm"
) -> dict[str, Any]:
    value = callback_value(operation_view(op), action)
    return card_action(value, event_id=event_id, operator=operator, message_id=f"om_{op.id}")


def consumer(store: Store) -> CallbackConsumer:
    return CallbackConsumer(
        store, CallbackSettings(APP_ID, frozenset({OUR_TENANT}), recover_after_s=0)
    )
