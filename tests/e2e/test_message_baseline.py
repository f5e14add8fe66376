"""The baseline gate before a message draft is filed (issue 17, item 1), through the API and
onto the card in the sandbox: a signed contract refuses (422, its evidence, nothing stored),
forcing files it stamped, facts are shown, and a source that cannot be read files it stamped
as unchecked. Both backends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.factories import message_request
from tests.support.stack import ACME_DESTINATION, Stack, StackFactory, card_says
from workers.domains.message.baseline import OVERRIDE_STAMP, UNAVAILABLE_STAMP

FACTS = [
    {"at": "2026-11-20T10:00:00Z", "text": "Delivery window agreed: Fridays 08:00-12:00"},
    {"at": "2026-11-28T16:30:00Z", "text": "Invoice 4411 paid"},
]
EVIDENCE = "MSA v3, signed 2026-11-02 by both parties"


def write_baseline(path: Path, contract_status: str) -> None:
    contract = {"status": contract_status, "evidence": EVIDENCE, "at": "2026-11-02T09:00:00Z"}
    path.write_text(
        json.dumps({"counterparties": {"acme-supplier": {"contract": contract, "facts": FACTS}}})
    )


def baseline_term(view: dict[str, Any]) -> str | None:
    terms = {term["name"]: term["value"] for term in view["terms"]["terms"]}
    return terms.get("baseline")


async def test_each_rule_of_the_gate_from_the_api_to_the_card(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    baseline = tmp_path / "baseline.json"
    write_baseline(baseline, "signed")
    stack: Stack = await make_stack(
        "ws", destinations=[{**ACME_DESTINATION, "baseline_file": str(baseline)}]
    )

    # a signed contract: refused with its evidence and the way out, by the check endpoint too
    for path in ("/api/v1/operations", "/api/v1/operations/check"):
        status, refused = await stack.post(path, message_request("gate-signed"))
        assert status == 422 and refused["error"]["code"] == "signed_contract_on_record", refused
        [field] = refused["error"]["fields"]
        assert field["field"] == "payload.counterparty"
        assert "contract signed on 2026-11-02" in field["reason"] and EVIDENCE in field["reason"]
        assert "force_despite_signed_contract" in field["fix"]
    assert not (await stack.store.list_operations(limit=10)).items

    # forced: filed, the override stamped on the card (with the facts), bound into the digest
    forced = message_request("gate-forced")
    forced["payload"]["force_despite_signed_contract"] = True
    view, card = await stack.offered(forced)
    assert (term := baseline_term(view)) is not None and term.startswith(OVERRIDE_STAMP)
    await card_says(stack, card, OVERRIDE_STAMP, EVIDENCE, "2026-11-28 Invoice 4411 paid")

    # nothing settled: filed as asked, the freshest facts shown
    write_baseline(baseline, "negotiating")
    view, card = await stack.offered(message_request("gate-facts"))
    assert baseline_term(view) == (
        "[BASELINE FACTS: 2026-11-28 Invoice 4411 paid; "
        "2026-11-20 Delivery window agreed: Fridays 08:00-12:00]"
    )
    await card_says(stack, card, "[BASELINE FACTS: 2026-11-28 Invoice 4411 paid")
    assert OVERRIDE_STAMP not in stack.state.messages[card].content

    # the source cannot be read: filed anyway, and the card says the guard was off
    baseline.write_text("{ not json")
    view, card = await stack.offered(message_request("gate-down"))
    assert (term := baseline_term(view)) is not None and term.startswith(UNAVAILABLE_STAMP)
    await card_says(stack, card, UNAVAILABLE_STAMP, "the signed-contract guard was off")
    baseline.unlink()
    view, card = await stack.offered(message_request("gate-gone"))
    await card_says(stack, card, UNAVAILABLE_STAMP, "cannot be read")


async def test_a_destination_without_a_baseline_files_as_before(make_stack: StackFactory) -> None:
    stack: Stack = await make_stack("ws")
    view, _card = await stack.offered(message_request("no-gate"))
    assert baseline_term(view) is None
