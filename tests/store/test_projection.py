"""The one projection (store/reads/projection.py): `operation_view` makes the typed model every
reader takes, keyed by the vocabulary's enums, and its JSON is the API's answer as it always
was: the same keys in the same order, enums as their strings, a source's absent reason and
routes left out."""

from __future__ import annotations

import json

from store import (
    CardDelivery,
    ClickAction,
    Entry,
    Execution,
    OperationView,
    OutcomeView,
    Source,
    Stage,
    State,
    Store,
    Tone,
    operation_view,
    reached,
)
from store.vocabulary import CHECKED
from tests.support.factories import claimed, offered

# the projection's JSON keys, in the order the API has always answered them
KEYS = [
    "projection_version",
    "id",
    "kind",
    "schema_version",
    "state",
    "version",
    "confirm_digest",
    "created_at",
    "updated_at",
    "expires_at",
    "auto_send_at",
    "simulated",
    "world",
    "executor",
    "audience",
    "target",
    "terms",
    "payload",
    "payload_digest",
    "projection_digest",
    "source",
    "approval",
    "decision",
    "card",
    "execution",
    "outcome",
    "outcomes",
    "people",
]


async def test_the_projection_is_the_typed_model_keyed_by_the_vocabulary(store: Store) -> None:
    op = await claimed(store)
    view = operation_view(op)
    assert isinstance(view, OperationView)
    assert view.state is State.CLAIMED
    assert view.decision is not None
    assert (view.decision.action, view.decision.entry) == (ClickAction.CONFIRM, Entry.LARK)
    assert view.execution is not None and view.execution.state is Execution.QUEUED
    assert view.card.delivery is CardDelivery.PENDING  # the claim moved it past its card
    assert reached(view, "decided") and not reached(view, "final")


async def test_its_json_is_the_apis_answer_enums_as_their_words(store: Store) -> None:
    op = await offered(store)
    data = operation_view(op).model_dump(mode="json")
    assert list(data) == KEYS
    assert data["state"] == "awaiting_confirmation" and data["card"]["delivery"] == "current"
    assert data["decision"] is None and data["people"] == {}
    # the source as the envelope keeps it: no reason or routes when it has none
    assert list(data["source"]) == ["proposer", "request_id", "requester_open_id", "context"]
    json.dumps(data)  # plain JSON through and through

    why = await offered(store, source=Source("dev-agent", "req-why", reason="Hedge"))
    assert operation_view(why).model_dump(mode="json")["source"]["reason"] == "Hedge"


def test_an_outcome_reads_its_stage_and_tone_as_enums() -> None:
    outcome = OutcomeView.model_validate(
        {
            "stage": "reconciled",
            "status": "filled",
            "detail": {},
            "outcome_digest": "o" * 64,
            "reconciles_digest": "u" * 64,
            "final": True,
            "tone": "good",
            "words": {"en": "Filled"},
        }
    )
    assert (outcome.stage, outcome.tone) == (Stage.RECONCILED, Tone.GOOD)
    assert outcome.model_dump(mode="json")["stage"] == "reconciled"


def test_card_delivery_is_read_off_the_card_columns_never_stored() -> None:
    assert CardDelivery not in CHECKED.values()
