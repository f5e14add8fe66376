"""service.call's words: the card's title and headlines, a label per fixed term (each argument
is labelled from its schema's title), and what each outcome status says."""

from __future__ import annotations

from collections.abc import Mapping

from store import Tone
from workers.domains.words import KindWords, Meaning, Said

WORDS = KindWords(
    title=Said("Confirm service call", "确认服务调用"),
    waiting=Said("Service call to confirm", "待确认服务调用"),
    partly=Said(
        "Service call to confirm — {count} of {required} confirmed",
        "待确认服务调用 — 已确认 {count}/{required}",
    ),
    terms={
        "service": Said("Service", "服务"),
        "action": Said("Action", "操作"),
        "endpoint": Said("Called at", "调用地址"),
        "idempotent": Said("If the answer is lost", "若答复丢失"),
        "status_endpoint": Said("Status checked at", "状态查询地址"),
    },
)

# The `idempotent` term's value: whether countersign may send the confirmed call again, with
# the same Idempotency-Key, when its answer is lost (the operator sees which before confirming).
RETRIED = "idempotent: retried with the same key"
NOT_RETRIED = "not idempotent: never sent twice (checked by status, else by a person)"

COMPLETED = "completed"
REFUSED = "refused"
NOT_SENT = "not_sent"

OUTCOMES: Mapping[str, Meaning] = {
    # the service answered 2xx (or its status endpoint says it completed)
    COMPLETED: Meaning(Said("Done by the service", "服务已执行"), Tone.GOOD, final=True),
    # the service answered 4xx (or its status endpoint says it refused): it did nothing
    REFUSED: Meaning(Said("Refused by the service", "服务拒绝执行"), Tone.BAD, final=True),
    # nothing left countersign: the address was refused, did not resolve, or no connection
    # opened (the detail says which); propose again once the service is reachable
    NOT_SENT: Meaning(
        Said("Not sent — the service was not reached", "未发送 — 未能连到服务"),
        Tone.BAD,
        final=True,
    ),
}
