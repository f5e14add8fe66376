"""On start, web decisions a previous run wrote but never answered get their answer.

A web post's first write holds its inbox entry and its decision in one commit; its answer,
and a refusal's record, come in a second (bot/decide/decider.py). A crash between the two
leaves the entry `received`: the page that post redirected to would say "processing" for
ever. bot/decide/recovery.py settles each, as for card clicks; here is what the web says of
them: a decision on record is answered as it was made; an entry with none is recorded
refused `recovered_unanswered` and answered so. Nothing claims or rejects: the person who
posted has moved on, and may post again.
"""

from __future__ import annotations

from typing import Any

from bot.api.web_decide import WebResult, counted_answer
from bot.decide.counters import DecisionCounters
from bot.decide.recovery import RECOVER_AFTER_S, Recovery
from kernel.reasons import Reason
from store import Click, Confirmation, Entry, InboxEntry, State, Store


class WebLeftovers:
    """The web entry's `Leftovers` (bot/decide/recovery.py)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def click(self, entry: InboxEntry) -> Click:
        asked = entry.payload  # as bot/api/web_decide.py wrote it
        return Click(
            operation_id=str(asked.get("operation_id", "")),
            action=str(asked.get("action", "")),
            digest=str(asked.get("digest", "")),
            operator_open_id=str(asked.get("operator", "")),
            event_id=entry.key,
            entry=Entry.WEB.value,
        )

    async def refusal(self, entry: InboxEntry) -> tuple[Reason, dict[str, Any]]:
        reason = Reason.RECOVERED_UNANSWERED  # decided by nobody: never applied now
        return reason, {"result": WebResult.REFUSED.value, "reason": reason.value}

    async def recorded_answer(self, record: Confirmation) -> dict[str, Any]:
        """What the post's own answer would have said, from its record."""
        if not record.accepted:
            return {
                "result": WebResult.REFUSED.value,
                "reason": record.reason_code or Reason.MALFORMED_VALUE.value,
            }
        if record.action == "reject":
            return {"result": WebResult.REJECTED.value}
        op = await self.store.get(record.operation_id)
        if op is not None and op.state is State.AWAITING_CONFIRMATION:  # one of N counted
            return counted_answer(op)
        return {"result": WebResult.CLAIMED.value}


class WebRecovery(Recovery):
    def __init__(
        self,
        store: Store,
        counters: DecisionCounters | None = None,  # the process's, shared with the card
        *,
        recover_after_s: float = RECOVER_AFTER_S,
    ) -> None:
        super().__init__(
            store,
            Entry.WEB,
            WebLeftovers(store),
            counters if counters is not None else DecisionCounters(),
            recover_after_s=recover_after_s,
        )
