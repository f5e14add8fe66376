"""On start, web decisions a previous run wrote but never answered get their answer.

A web post's first write holds its inbox entry and its decision in one commit
(bot/api/web_decide.py); its answer, and a refusal's record, come in a second. A crash
between the two leaves the entry `received`: the page that post redirected to would say
"processing" for ever, and a refusal would be on record nowhere. So, as the card consumer
does for clicks (bot/ingress/recovery.py): a decision on record is answered as it was made;
an entry with none is recorded refused `recovered_unanswered` and answered so. Nothing here
claims or rejects: the person who posted has moved on, and may post again.

An entry is left alone until it is `recover_after_s` old: on a shared PostgreSQL another
replica may still be answering a post it received just before this one started.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from bot.api.web_decide import INBOX_KIND, counted_answer
from bot.ingress.callbacks import RECOVER_AFTER_S
from bot.ingress.recovery import settle_leftovers
from store.authority import Store
from store.decisions import Click
from store.inbox import Inbox, InboxEntry
from store.lifecycle import State
from store.logcontext import about
from store.reasons import Reason
from store.records import Confirmation
from store.vocabulary import Entry

log = logging.getLogger("countersign.api")


class WebRecovery:
    def __init__(self, store: Store, *, recover_after_s: float = RECOVER_AFTER_S) -> None:
        self.store = store
        self.recover_after_s = recover_after_s
        self.inbox = Inbox(store)

    async def run(self, started_at: datetime) -> None:
        """Answer each web post a previous run (received before `started_at`) left open."""
        await settle_leftovers(
            self.inbox, INBOX_KIND, started_at, self.recover_after_s, self.settle
        )

    async def settle(self, entry: InboxEntry) -> None:
        asked = entry.payload
        operation_id = str(asked.get("operation_id", ""))
        with about(operation_id):
            record = await self.store.confirmation_of(operation_id, entry.key)
            if record is None:  # decided by nobody: on record as refused, never applied now
                click = Click(
                    operation_id=operation_id,
                    action=str(asked.get("action", "")),
                    digest=str(asked.get("digest", "")),
                    operator_open_id=str(asked.get("operator", "")),
                    event_id=entry.key,
                    entry=Entry.WEB.value,
                )
                reason = Reason.RECOVERED_UNANSWERED
                answer: dict[str, Any] = {"result": "refused", "reason": reason.value}
                also = self.store.refusal_statements(click, reason)
            else:
                answer, also = await self._recorded_answer(record), ()
            if await self.inbox.answered(INBOX_KIND, entry.key, answer, None, also):
                log.info("recovered a web decision left unanswered: %s", answer["result"])

    async def _recorded_answer(self, record: Confirmation) -> dict[str, Any]:
        """What the post's own answer would have said, from its record."""
        if not record.accepted:
            return {
                "result": "refused",
                "reason": record.reason_code or Reason.MALFORMED_VALUE.value,
            }
        if record.action == "reject":
            return {"result": "rejected"}
        op = await self.store.get(record.operation_id)
        if op is not None and op.state is State.AWAITING_CONFIRMATION:  # one of N counted
            return counted_answer(op)
        return {"result": "claimed"}
