"""The seam between Lark's transports (ws.py, webhook.py) and the two consumers.

Two consumers, never one: docs/architecture.md §4. Transports authenticate and decode;
consumers decide. Both methods run on the main asyncio loop (the aiohttp loop); of the
consumers, only the callback consumer's ack terms (`IngressPort.callbacks`: a deadline and a
toast, read-only) are read on the lark-oapi thread.

One ack budget: a transport waits for a callback's answer exactly as long as the consumer
says (`transport_deadline_s`, derived in bot/ingress/ack.py from `lark.answer_budget_s`),
then answers with the consumer's own "processing" toast, so Lark's 3 s hold even when the
consumer is stuck, and the operator sees one "processing", in the cards' language.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Literal, Protocol

from kernel.canonical import record_json

log = logging.getLogger("countersign.lark.ingress")

Transport = Literal["ws", "webhook"]

CARD_ACTION_TRIGGER = "card.action.trigger"


class CallbackAck(Protocol):
    """What a transport needs of the callback consumer to answer for it: the consumer's own
    terms (bot/ingress/ack.py `AckTerms`, from the one ack budget, `lark.answer_budget_s`)."""

    @property
    def transport_deadline_s(self) -> float:
        """How long to wait for `on_callback`: after the consumer's own last answer, inside
        Lark's 3 s with room for the ack's way back."""
        ...

    def processing(self) -> dict[str, Any]:
        """The answer when the consumer has not answered by then, raised, or answered
        something that is not a JSON object: its own "processing" toast, in its language,
        never a claim. The consumer owns the follow-up (the card's patch)."""
        ...

    def answered_for(self, event_id: str) -> None:
        """The transport acked this click itself at its deadline (from any thread): whatever
        the consumer answers later never reaches Lark, so the card it carried is not shown."""
        ...


class IngressPort(Protocol):
    @property
    def callbacks(self) -> CallbackAck:
        """The callback consumer, for the terms of its ack."""
        ...

    async def on_callback(self, envelope: dict[str, Any], transport: str) -> dict[str, Any]:
        """A card.action.trigger envelope (schema 2.0 dict as Lark sends it). Returns the answer
        body ({"toast": ..., "card": {"type": "raw", "data": ...}} or {}) within the ack budget."""
        ...

    def on_event(self, envelope: dict[str, Any], transport: str) -> None:
        """Any other event (im.message.receive_v1, ...). Must return at once (enqueue)."""
        ...


def event_type(envelope: dict[str, Any]) -> str:
    """`header.event_type` (schema 2.0), else `event.type` (schema 1.0), else ""."""
    header = envelope.get("header")
    if isinstance(header, dict) and isinstance(header.get("event_type"), str):
        return str(header["event_type"])
    event = envelope.get("event")
    if isinstance(event, dict) and isinstance(event.get("type"), str):
        return str(event["type"])
    return ""


def is_callback(envelope: dict[str, Any]) -> bool:
    return event_type(envelope) == CARD_ACTION_TRIGGER


def answer_bytes(answer: Any) -> bytes:
    """The answer as JSON bytes; raises ValueError/TypeError unless it is a JSON object."""
    if not isinstance(answer, dict):
        raise TypeError(f"a callback answer is a JSON object, not {type(answer).__name__}")
    return record_json(answer).encode("utf-8")


async def bounded_answer(
    pending: asyncio.Future[dict[str, Any]], event_id: str, transport: str, ack: CallbackAck
) -> bytes:
    """Wait up to the consumer's `transport_deadline_s` for its answer; else (or if it failed)
    the consumer's own "processing" toast.

    Never cancels `pending`: the consumer may be inside the transaction that commits the claim,
    and it must be free to finish and patch the card itself. A late result is logged and dropped.
    Runs on the transport's loop (over ws, the SDK's thread), so it answers in time even when
    the consumer's loop is stuck; `ack` is read-only and safe to read from there.
    """
    deadline_s = ack.transport_deadline_s
    done, _ = await asyncio.wait({pending}, timeout=deadline_s)
    if not done:
        log.warning(
            "callback %s over %s not answered within %.3gs; acked with the processing toast",
            event_id,
            transport,
            deadline_s,
        )
        pending.add_done_callback(_late(event_id, transport))
        ack.answered_for(event_id)
        return answer_bytes(ack.processing())
    if pending.cancelled():
        log.error("callback %s over %s: consumer was cancelled", event_id, transport)
        return answer_bytes(ack.processing())
    error = pending.exception()
    if error is not None:
        log.error(
            "callback %s over %s: consumer raised; acked with the processing toast",
            event_id,
            transport,
            exc_info=error,
        )
        return answer_bytes(ack.processing())
    try:
        return answer_bytes(pending.result())
    except (TypeError, ValueError) as error:
        log.error("callback %s over %s: unusable answer: %s", event_id, transport, error)
        return answer_bytes(ack.processing())


def _late(event_id: str, transport: str) -> Callable[[asyncio.Future[dict[str, Any]]], None]:
    def report(future: asyncio.Future[dict[str, Any]]) -> None:
        if future.cancelled():
            return
        error = future.exception()  # retrieving it also silences "never retrieved"
        if error is not None:
            log.error("late callback %s over %s failed", event_id, transport, exc_info=error)
        else:
            log.info("late callback %s over %s finished after its ack", event_id, transport)

    return report


def event_id(envelope: dict[str, Any]) -> str:
    header = envelope.get("header")
    if isinstance(header, dict) and isinstance(header.get("event_id"), str):
        return str(header["event_id"])
    uuid = envelope.get("uuid")  # schema 1.0
    return str(uuid) if isinstance(uuid, str) else ""
