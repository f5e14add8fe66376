"""The reminder's words (cards/reminder.py, pure): whom it waits for is every approver who has
not confirmed, in the approvers' order, never the requester (who cannot count), and only
those are mentioned."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cards.reminder import reminder_text, waiting_for
from store import OperationView
from tests.support.projection import view_of

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TRIO = ["ou_alice", "ou_bob", "ou_carol"]


def view(
    confirmed_by: list[str], requester: str | None = None, approvers: list[str] = TRIO
) -> OperationView:
    """An operation's view (store/reads/projection.py) with the parts a reminder reads."""
    return view_of(
        {
            "kind": "finance.order",
            "terms": {"title": "BUY 0.010 BTC-PERP"},
            "expires_at": (NOW + timedelta(seconds=299)).isoformat().replace("+00:00", "Z"),
            "approval": {"required": 2, "approvers": approvers, "confirmed_by": confirmed_by},
            "source": {"proposer": "dev-agent", "requester_open_id": requester},
        }
    )


@pytest.mark.parametrize(
    ("confirmed_by", "requester", "waiting"),
    [
        ([], None, TRIO),
        (["ou_alice"], None, ["ou_bob", "ou_carol"]),
        ([], "ou_bob", ["ou_alice", "ou_carol"]),
        (["ou_carol"], "ou_alice", ["ou_bob"]),
        (["ou_alice", "ou_carol"], "ou_bob", []),
        ([], "ou_zed", TRIO),  # a requester who is no approver leaves nobody out
    ],
    ids=["nobody-yet", "alice-confirmed", "bob-requested", "both-left-out", "none-left", "other"],
)
def test_it_waits_for_the_approvers_who_have_not_confirmed_never_the_requester(
    confirmed_by: list[str], requester: str | None, waiting: list[str]
) -> None:
    assert waiting_for(view(confirmed_by, requester)) == waiting


def test_the_approvers_order_is_kept() -> None:
    assert waiting_for(view([], approvers=["ou_carol", "ou_alice", "ou_bob"])) == [
        "ou_carol",
        "ou_alice",
        "ou_bob",
    ]


def test_the_reminder_mentions_exactly_those_it_waits_for() -> None:
    said = reminder_text(view(["ou_carol"], "ou_alice"), lang="en", now=NOW, tz=UTC)
    assert said == (
        "Reminder: BUY 0.010 BTC-PERP expires in 4 min (09:04 UTC) and nothing runs unless it "
        'is confirmed. 1 of 2 confirmed; waiting for <at user_id="ou_bob"></at>'
    )
