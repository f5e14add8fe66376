"""The CLI's plain-text operation (`countersign show`): what the approval policy asks, who
confirmed, and the decision with its reason, as the card and the dashboard say them."""

from __future__ import annotations

from bot.api.dashboard_html import detail_html
from bot.render import operation_text
from store.authority import Store
from store.decisions import Click, Counted, Decided
from store.envelope import Approval, Audience
from store.projection import operation_view
from tests.support.factories import offered

TRIO = Audience("ops", "oc_ops", ("ou_alice", "ou_bob", "ou_carol"))
LARGE = Approval(required=2, rule="large", threshold="50,000 USDC", notional="60000.00 USDC")
RECORDS = {"confirmations": [], "attempt": None, "card": [], "deliveries": []}


def click(op_id: str, digest: str, action: str, operator: str) -> Click:
    return Click(op_id, action, digest, operator, "oc_ops", None)


async def test_show_and_the_dashboard_say_what_is_needed_who_confirmed_and_why_it_was_rejected(
    store: Store,
) -> None:
    op = await offered(store, audience=TRIO, approval=LARGE)
    counted = await store.confirm_and_claim(click(op.id, op.confirm_digest, "confirm", "ou_alice"))
    assert isinstance(counted, Counted)
    shown = operation_text(operation_view(counted.operation))
    assert "  approval: 2 of ou_alice, ou_bob, ou_carol (above 50,000 USDC)" in shown
    assert "  notional: 60000.00 USDC" in shown
    assert "  confirmed by: ou_alice" in shown

    vetoed = await store.reject(
        Click(op.id, "reject", op.confirm_digest, "ou_bob", "oc_ops", None, reason="Too big")
    )
    assert isinstance(vetoed, Decided)
    view = operation_view(vetoed.operation)
    shown = operation_text(view)
    assert "  decision: reject by ou_bob at " in shown and "  reason:   Too big" in shown
    page = detail_html(view, RECORDS, "en", "-")
    assert "approval: 2 of ou_alice, ou_bob, ou_carol (above 50,000 USDC)" in page
    assert '<span id="decision-reason">Too big</span>' in page
