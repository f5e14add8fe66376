"""docs/service-call.md says what the code does: its proposal is the kind's example, the
headers it lists are the ones sent, and the receiver calls it shows exist."""

from __future__ import annotations

import json
import re

from tests.support.processes import ROOT
from workers.domains.service import receiver
from workers.domains.service.calls import call_headers, status_headers
from workers.domains.service.examples import REFUND

DOC = (ROOT / "docs" / "service-call.md").read_text(encoding="utf-8")


def test_the_documented_proposal_is_the_kinds_example() -> None:
    [proposal] = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", DOC, re.S)]
    assert proposal["kind"] == "service.call" and proposal["payload"] == REFUND


def test_the_documented_headers_are_the_ones_sent() -> None:
    for name in call_headers("s" * 16, b"{}", "cs-op", "op"):
        assert name in DOC, name
    for name in status_headers("s" * 16, "cs-op", "op"):
        assert name in DOC, name


def test_the_receiver_calls_it_shows_exist() -> None:
    for name in ("receive", "status", "MemorySeenKeys", "SeenKeys"):
        assert f"{name}(" in DOC or f"`{name}`" in DOC, name
        assert hasattr(receiver, name), name


def test_the_documented_fence_is_the_one_signed_and_asked() -> None:
    assert f"&{receiver.FENCE_PARAM}=1" in DOC
    signed = receiver.status_signed("cs-op", fence=True).decode()
    assert f'"<timestamp>.<the key>{signed.removeprefix("cs-op")}"' in DOC
    assert '{"status": "unknown", "fenced": true}' in DOC and "`FENCED`" in DOC
    assert hasattr(receiver, "FENCED")
