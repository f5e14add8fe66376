"""The receiver helper a service copies: only a call countersign signed, inside the window,
runs, and it runs once per Idempotency-Key; a replay gets the first answer, a different call
under a used key is refused, a forged or stale one is refused."""

from __future__ import annotations

import ast
import json
import time
from pathlib import Path
from typing import Any

from workers.domains.service import receiver
from workers.domains.service.calls import call_headers, status_headers
from workers.domains.service.receiver import MemorySeenKeys, receive, status

SECRET = "a-service-secret-0123456789"
KEY = "cs-op1"


def body(**changes: Any) -> bytes:
    call = {
        "operation_id": "op1",
        "client_id": KEY,
        "service": "billing",
        "action": "refund",
        "arguments": {"order_id": "ord_1", "amount": "5.00"},
        "confirm_digest": "d" * 64,
        "confirmed_by": [{"open_id": "ou_alice", "name": "Alice"}],
    }
    call.update(changes)
    return json.dumps(call).encode()


def test_the_helper_imports_only_the_standard_library() -> None:
    tree = ast.parse(Path(receiver.__file__).read_text(encoding="utf-8"))
    imported = {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    } | {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert imported <= {
        "__future__",
        "hashlib",
        "hmac",
        "json",
        "re",
        "threading",
        "time",
        "collections",
        "dataclasses",
        "typing",
    }


def test_a_call_signed_by_countersign_runs_once_and_a_replay_gets_the_first_answer() -> None:
    seen = MemorySeenKeys()
    raw = body()
    headers = call_headers(SECRET, raw, KEY, "op1")  # exactly what the runner sends
    verdict = receive(SECRET, headers, raw, seen)
    assert verdict.answer is None and verdict.key == KEY and verdict.call is not None
    assert receive(SECRET, headers, raw, seen).answer == (
        503,
        b'{"error": "this call is being run; ask again"}',
    )
    seen.finish(KEY, 200, b'{"refund_id": "rf_1"}')
    again = receive(SECRET, call_headers(SECRET, raw, KEY, "op1"), raw, seen)
    assert again.answer == (200, b'{"refund_id": "rf_1"}') and again.call is None
    # new display names for the approvers: still the same call
    renamed = body(confirmed_by=[{"open_id": "ou_alice", "name": "Alice Liddell"}])
    same = receive(SECRET, call_headers(SECRET, renamed, KEY, "op1"), renamed, seen)
    assert same.answer == (200, b'{"refund_id": "rf_1"}')


def test_a_different_call_under_a_used_key_is_refused() -> None:
    seen = MemorySeenKeys()
    raw = body()
    receive(SECRET, call_headers(SECRET, raw, KEY, "op1"), raw, seen)
    seen.finish(KEY, 200, b"{}")
    other = body(arguments={"order_id": "ord_1", "amount": "500.00"})
    verdict = receive(SECRET, call_headers(SECRET, other, KEY, "op1"), other, seen)
    assert verdict.answer is not None and verdict.answer[0] == 422 and verdict.call is None


def test_a_forged_call_is_refused() -> None:
    seen = MemorySeenKeys()
    raw = body()
    forged = call_headers("not-the-secret-0123456789", raw, KEY, "op1")
    assert receive(SECRET, forged, raw, seen).answer[0] == 401  # type: ignore[index]
    tampered = body(arguments={"order_id": "ord_1", "amount": "9999.00"})
    signed_for_other = call_headers(SECRET, raw, KEY, "op1")
    assert receive(SECRET, signed_for_other, tampered, seen).answer[0] == 401  # type: ignore[index]
    assert receive(SECRET, {}, raw, seen).answer[0] == 401  # type: ignore[index]
    assert receive("", call_headers(SECRET, raw, KEY, "op1"), raw, seen).answer[0] == 401  # type: ignore[index]
    assert seen.get(KEY) is None  # nothing ran, nothing was recorded


def test_a_stale_signed_call_is_a_replay_and_refused() -> None:
    seen = MemorySeenKeys()
    raw = body()
    headers = call_headers(SECRET, raw, KEY, "op1")
    later = time.time() + receiver.TOLERANCE_S + 5
    verdict = receive(SECRET, headers, raw, seen, now=later)
    assert verdict.answer is not None and verdict.answer[0] == 401
    assert b"window" in verdict.answer[1]


def test_a_signed_body_cannot_run_under_another_key() -> None:
    seen = MemorySeenKeys()
    raw = body()
    headers = {**call_headers(SECRET, raw, KEY, "op1"), "Idempotency-Key": "cs-other"}
    verdict = receive(SECRET, headers, raw, seen)
    assert verdict.answer is not None and verdict.answer[0] == 400 and seen.get("cs-other") is None


def test_the_status_answer_follows_the_stored_call() -> None:
    seen = MemorySeenKeys()
    headers = status_headers(SECRET, KEY, "op1")
    assert json.loads(status(SECRET, headers, KEY, seen)[1]) == {"status": "unknown"}
    seen.begin(KEY, "f")
    assert json.loads(status(SECRET, headers, KEY, seen)[1]) == {"status": "running"}
    seen.finish(KEY, 200, b'{"refund_id": "rf_1"}')
    code, answer = status(SECRET, headers, KEY, seen)
    assert code == 200 and json.loads(answer) == {
        "status": "completed",
        "answer": {"refund_id": "rf_1"},
        "http_status": 200,
    }
    seen = MemorySeenKeys()
    seen.begin(KEY, "f")
    seen.finish(KEY, 409, b'{"message": "already refunded"}')
    assert json.loads(status(SECRET, headers, KEY, seen)[1])["message"] == "already refunded"


def test_a_status_request_is_signed_over_its_key() -> None:
    seen = MemorySeenKeys()
    headers = status_headers(SECRET, KEY, "op1")
    assert status(SECRET, headers, "cs-other", seen)[0] == 401
    assert status("wrong-secret-0123456789", headers, KEY, seen)[0] == 401


def fence_headers() -> dict[str, str]:
    return status_headers(SECRET, KEY, "op1", fence=True)


def test_a_fenced_key_is_never_run_when_its_call_arrives_late() -> None:
    seen = MemorySeenKeys()
    code, answer = status(SECRET, fence_headers(), KEY, seen, fence=True)
    assert code == 200 and json.loads(answer) == {"status": "unknown", "fenced": True}
    # asked again, with or without the fence: still never received, for good
    again = status(SECRET, status_headers(SECRET, KEY, "op1"), KEY, seen)
    assert json.loads(again[1]) == {"status": "unknown", "fenced": True}
    assert status(SECRET, fence_headers(), KEY, seen, fence=True) == (code, answer)

    raw = body()  # the call, signed and in its window, arriving after the fence
    late = receive(SECRET, call_headers(SECRET, raw, KEY, "op1"), raw, seen)
    assert late.call is None and late.key is None  # nothing for the handler to run
    assert late.answer is not None and late.answer[0] == 409
    assert "declared never received" in json.loads(late.answer[1])["error"]
    stored = seen.get(KEY)
    assert stored == receiver.Stored(receiver.FENCED, None)  # nothing was finished under it


def test_a_status_request_without_the_fence_fences_nothing() -> None:
    seen = MemorySeenKeys()
    plain = status(SECRET, status_headers(SECRET, KEY, "op1"), KEY, seen)
    assert json.loads(plain[1]) == {"status": "unknown"} and seen.get(KEY) is None
    raw = body()
    verdict = receive(SECRET, call_headers(SECRET, raw, KEY, "op1"), raw, seen)
    assert verdict.answer is None and verdict.call is not None  # it still runs


def test_a_fence_never_overrides_a_call_that_arrived() -> None:
    seen = MemorySeenKeys()
    raw = body()
    assert receive(SECRET, call_headers(SECRET, raw, KEY, "op1"), raw, seen).call is not None
    running = status(SECRET, fence_headers(), KEY, seen, fence=True)
    assert json.loads(running[1]) == {"status": "running"}
    seen.finish(KEY, 200, b'{"refund_id": "rf_1"}')
    done = json.loads(status(SECRET, fence_headers(), KEY, seen, fence=True)[1])
    assert done["status"] == "completed" and "fenced" not in done


def test_a_forged_fence_request_is_refused_and_fences_nothing() -> None:
    seen = MemorySeenKeys()
    # a captured plain status request replayed as a fence: the signature does not cover it
    assert status(SECRET, status_headers(SECRET, KEY, "op1"), KEY, seen, fence=True)[0] == 401
    # a fence request read as a plain one (a service that ignores fence=1) is not countersign's
    assert status(SECRET, fence_headers(), KEY, seen)[0] == 401
    wrong = status_headers("not-the-secret-0123456789", KEY, "op1", fence=True)
    assert status(SECRET, wrong, KEY, seen, fence=True)[0] == 401
    assert status(SECRET, fence_headers(), "cs-other", seen, fence=True)[0] == 401
    later = time.time() + receiver.TOLERANCE_S + 5
    assert status(SECRET, fence_headers(), KEY, seen, fence=True, now=later)[0] == 401
    assert seen.get(KEY) is None and seen.get("cs-other") is None
    raw = body()
    assert receive(SECRET, call_headers(SECRET, raw, KEY, "op1"), raw, seen).call is not None
