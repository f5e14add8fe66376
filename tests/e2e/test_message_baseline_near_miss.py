"""The signed-contract gate on near-miss baseline data, through the API and onto the card
(issue 30, item 6): a key written `Acme-Supplier` with status `"signed "` still refuses the
draft (422, nothing stored), and a status outside the closed set (`"Signed (v3)"`) files it
stamped unchecked, never as if nothing were settled. Both backends."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.factories import message_request
from tests.support.stack import ACME_DESTINATION, Stack, StackFactory, card_says
from workers.domains.message.baseline import UNAVAILABLE_STAMP


def write_contract(path: Path, key: str, status: str) -> None:
    contract = {"status": status, "evidence": "MSA v3, signed by both"}
    path.write_text(json.dumps({"counterparties": {key: {"contract": contract}}}))


async def test_near_miss_baseline_data_never_lets_a_draft_through_silently(
    make_stack: StackFactory, tmp_path: Path
) -> None:
    baseline = tmp_path / "baseline.json"
    write_contract(baseline, "Acme-Supplier", "signed ")
    stack: Stack = await make_stack(
        "ws", destinations=[{**ACME_DESTINATION, "baseline_file": str(baseline)}]
    )
    status, refused = await stack.post("/api/v1/operations", message_request("near-miss"))
    assert status == 422 and refused["error"]["code"] == "signed_contract_on_record", refused
    assert not (await stack.store.list_operations(limit=10)).items

    write_contract(baseline, "acme-supplier", "Signed (v3)")
    view, card = await stack.offered(message_request("off-the-list"))
    terms = {term["name"]: term["value"] for term in view["terms"]["terms"]}
    assert terms["baseline"].startswith(UNAVAILABLE_STAMP)
    assert "'Signed (v3)' is not a contract status" in terms["baseline"]
    await card_says(stack, card, UNAVAILABLE_STAMP, "the signed-contract guard was off")
