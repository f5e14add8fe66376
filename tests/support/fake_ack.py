"""The callback consumer's side of the ack, as the transports see it (a test double): its
terms (bot/ingress/ack.py `AckTerms`) and the clicks a transport said it answered for."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from bot.ingress.ack import AckTerms


@dataclass
class FakeAck:
    terms: AckTerms = field(default_factory=AckTerms)
    answered_for_ids: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def transport_deadline_s(self) -> float:
        return self.terms.transport_deadline_s

    def processing(self) -> dict[str, Any]:
        return self.terms.processing()

    def answered_for(self, event_id: str) -> None:
        with self._lock:  # from the transport's thread
            self.answered_for_ids.append(event_id)
