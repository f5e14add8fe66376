"""message.send through Lark: one message in the counterparty chat, a receipt in the ops chat
(with its footer: who approved it, the decision id, the draft's hash).

The operation's client id is the message's `uuid`, so Lark itself turns a repeated create
into the first message for one hour (docs/lark-reference.md: uuid dedupe). That is what makes
reconciling an unknown send safe: inside the window, sending again with the same uuid
either returns the message that was posted or posts it for the first time, never a second
copy. After the window Lark no longer dedupes, so an unknown send that old is left to a
person instead of being retried.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from cards.plain_text import NAME_MAX_CHARS, TITLE_MAX_CHARS, people_text
from workers.domains.base import STORED, LarkMessages
from workers.domains.execution import Observed, Refusal, Runner, SubmissionUnknown, Unresolvable
from workers.domains.message.schema import (
    EXECUTOR_NAME,
    EXECUTOR_REVISION,
    KIND,
    SHA_PREFIX,
    MessageSendV1,
    text_sha256,
)
from workers.domains.message.settings import MessageSettings
from workers.domains.message.text import lark_markup
from workers.domains.message.words import REJECTED, SENT
from workers.domains.types import hidden_character

if TYPE_CHECKING:  # annotations only: the registry loads no SQLAlchemy (countersign mcp)
    from store import Operation

log = logging.getLogger("countersign.message")

# Lark dedupes a uuid for one hour; stop re-sending well inside it (clock skew, latency).
RESEND_WINDOW = timedelta(minutes=55)


# Lark message create, reply and read (the workforce's, retried)
MessageChannel = LarkMessages


def _terminal(error: Exception) -> bool:
    return getattr(error, "kind", None) == "terminal"


def receipt_uuid(operation_id: str) -> str:
    return f"cs-rcpt-{operation_id}"


def sent_receipt_text(
    message: MessageSendV1, message_id: str, approvers: str, decision_id: str
) -> str:
    """The ops chat's line once the text went out, with its footer: who approved it, the
    decision's id and the approved text's hash. Only ever posted internally: the text sent
    to the counterparty is exactly the approved one. Names are text, never markup: an
    approver's configured name cannot mention the ops chat (cards/plain_text.py)."""
    counterparty = people_text(message.counterparty, NAME_MAX_CHARS)
    destination = people_text(message.destination, NAME_MAX_CHARS)
    return (
        f"Sent to {counterparty} ({destination}) as {message_id}.\n"
        f"approved by {people_text(approvers, TITLE_MAX_CHARS)} · receipt {decision_id} · "
        f"draft sha256 {text_sha256(message.text)[:SHA_PREFIX]}"
    )


class MessageRunner(Runner):
    kind = KIND
    executor_name = EXECUTOR_NAME
    executor_revision = EXECUTOR_REVISION

    def __init__(
        self,
        channel: MessageChannel,
        settings: MessageSettings,
        *,
        clock: Callable[[], datetime],
        decision_of: Callable[[str], Awaitable[str | None]],
        people: Mapping[str, str] | None = None,
        on_dispatched: Callable[[str], None] | None = None,
    ) -> None:
        self.channel = channel
        self.decision_of = decision_of  # operation id -> its claim's id (the decision)
        self.people = dict(people or {})
        self.settings = settings
        self.enabled = settings.enabled
        self.clock = clock
        self.on_dispatched = on_dispatched

    @staticmethod
    def message(op: Operation) -> MessageSendV1:
        return MessageSendV1.model_validate(op.payload, context=STORED)

    async def prepare(self, op: Operation) -> Refusal | None:
        message = self.message(op)
        # a draft admitted before today's text rules must not send markup or hidden characters
        problem = hidden_character(message.text) or lark_markup(message.text)
        if problem is not None:
            return Refusal("text_not_sendable", f"the text {problem.reason}", problem.fix)
        destination = self.settings.destination(message.destination)
        if destination is None or destination.counterparty != message.counterparty:
            return Refusal(
                "destination_not_configured",
                f"destination {message.destination!r} of {message.counterparty!r} "
                "is no longer configured",
                "configure the destination again, or file the draft for a configured one",
            )
        if message.reply_to is not None:
            return await self._reply_target_refusal(message.reply_to, destination.chat_id)
        return None

    async def _reply_target_refusal(self, reply_to: str, chat_id: str) -> Refusal | None:
        """A reply lands in its parent's chat, whichever chat the draft names: Lark must place
        `reply_to` in the destination's chat, or the text would go elsewhere (another
        counterparty's chat, an internal one). Read before dispatch; a transient failure
        raises (the executor looks again), a terminal one refuses. Where it really is, is not
        said: that is not the proposer's to learn."""
        fix = "file the draft again with reply_to naming a message in the destination's chat"
        try:
            found = await self.channel.get_message(reply_to)
        except Exception as error:
            if not _terminal(error):
                raise
            return Refusal("reply_to_unknown", f"Lark does not show message {reply_to}", fix)
        if found.get("chat_id") != chat_id or found.get("deleted") is True:
            return Refusal(
                "reply_to_elsewhere",
                f"message {reply_to} is not a message of the destination's chat",
                fix,
            )
        return None

    async def submit(self, op: Operation, client_id: str) -> Observed:
        return await self._send(op, client_id)

    async def lookup(
        self, op: Operation, client_id: str, dispatched_at: datetime | None
    ) -> Observed | None:
        if dispatched_at is not None and self.clock() - dispatched_at >= RESEND_WINDOW:
            raise Unresolvable(
                "the send is older than Lark's one-hour uuid dedupe window, so sending again "
                "could post a second copy; check the counterparty chat and settle it by hand"
            )
        return await self._send(op, client_id)  # same uuid: Lark returns the first message

    async def _send(self, op: Operation, client_id: str) -> Observed:
        message = self.message(op)
        destination = self.settings.destination(message.destination)
        if destination is None:
            raise Unresolvable(f"destination {message.destination!r} is no longer configured")
        try:
            # the same uuid either way: Lark dedupes a reply's as a create's, so reconciling an
            # unknown reply re-sends it as safely as an unknown send
            if message.reply_to is not None:
                message_id = await self.channel.reply_text(
                    message.reply_to, message.outbound(), client_id
                )
            else:
                message_id = await self.channel.send_text(
                    destination.chat_id, message.outbound(), client_id
                )
        except Exception as error:
            if _terminal(error):  # Lark refused it: nothing was posted
                return Observed(REJECTED, {"reason": str(error)[:300]})
            raise SubmissionUnknown(f"{type(error).__name__}: {str(error)[:200]}") from error
        if self.on_dispatched is not None:
            self.on_dispatched(client_id)
        if destination.ops_chat_id is not None:
            await self._receipt(op, message, destination.ops_chat_id, message_id)
        return Observed(
            SENT,
            {
                "message_id": message_id,
                "chat_id": destination.chat_id,
                "text_sha256": text_sha256(message.text),
                **({"reply_to": message.reply_to} if message.reply_to is not None else {}),
            },
        )

    async def _receipt(
        self, op: Operation, message: MessageSendV1, ops_chat_id: str, message_id: str
    ) -> None:
        """Tell the internal ops chat (never the counterparty) what went out."""
        approvers = op.confirmed_by or ((op.decided_by,) if op.decided_by else ())
        names = ", ".join(self.people.get(who, who) for who in approvers) or "?"
        try:
            decision_id = await self.decision_of(op.id) or "?"
            receipt = sent_receipt_text(message, message_id, names, decision_id)
            await self.channel.send_text(ops_chat_id, receipt, receipt_uuid(op.id))
        except Exception as error:  # the send stands; a missing receipt is only logged
            log.warning("receipt for %s not posted: %s", op.id, error)
