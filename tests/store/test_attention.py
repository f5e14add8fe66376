"""The dashboard's reads: what needs a person (by group, with counts), recent activity, and the
list by state, newest outcome and a search text, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from sqlalchemy import insert

from store.authority.records import Operation
from store.authority.store import Store
from store.cards.card_ledger import CardLedger
from store.claims.decisions import Claimed, Click
from store.execution.execution_ledger import ExecutionLedger
from store.execution.records import Observation
from store.lifecycle import Execution, State
from store.reads.attention import (
    AWAITING,
    CARD_FAILED,
    DELIVERY_FAILED,
    GROUPS,
    UNKNOWN,
    UNRESOLVED,
    attention,
    recent,
    search,
)
from store.schema.tables import DeliveryRow
from store.vocabulary import DeliveryState, Stage
from tests.support.factories import dispatching, draft, message_draft_fields, offered


async def claimed(store: Store, **overrides: object) -> Operation:
    op = await offered(store, **overrides)
    result = await store.confirm_and_claim(Click(op.id, "confirm", op.confirm_digest, "ou_alice"))
    assert isinstance(result, Claimed)
    await dispatching(store, op.id)
    return result.operation


async def observed(store: Store, op: Operation, status: str, execution: Execution) -> str:
    outcome = await ExecutionLedger(store).record_observation(
        op.id, Observation(Stage.INITIAL, status, execution, answers_attempt=True)
    )
    return outcome.outcome_digest


async def reconciled(store: Store, op: Operation, status: str, digest: str) -> None:
    seen = Observation(Stage.RECONCILED, status, Execution.RECONCILED, reconciles=digest)
    await ExecutionLedger(store).record_observation(op.id, seen)


async def failed_delivery(store: Store, op: Operation) -> None:
    row = {
        "id": f"d{op.id}"[:26],
        "operation_id": op.id,
        "channel": "webhook",
        "stage": "initial",
        "outcome_digest": "0" * 64,
        "state": DeliveryState.FAILED.value,
        "attempts": 8,
        "created_at": store.clock(),
    }
    await store.transact(lambda conn: conn.execute(insert(DeliveryRow).values(**row)))


async def test_each_group_holds_what_needs_a_person_with_its_count(store: Store) -> None:
    later = await offered(store, expires_in_s=900)
    sooner = await offered(store, expires_in_s=300)
    unposted = await offered(store, expires_in_s=1200)
    await CardLedger(store).failed(unposted.id, 1, "send", 500, "lark down", retry_in_s=None)
    unknown = await claimed(store)
    await observed(store, unknown, "unknown", Execution.SUBMISSION_UNKNOWN)
    # reconciled into "unresolved": no longer unknown, its newest outcome is what counts
    unresolved = await claimed(store)
    digest = await observed(store, unresolved, "unknown", Execution.SUBMISSION_UNKNOWN)
    await reconciled(store, unresolved, "unresolved", digest)
    settled = await claimed(store)
    first = await observed(store, settled, "unknown", Execution.SUBMISSION_UNKNOWN)
    await reconciled(store, settled, "filled", first)
    undelivered = await claimed(store)
    await observed(store, undelivered, "filled", Execution.COMPLETED)
    await failed_delivery(store, undelivered)

    groups = {group.key: group for group in await attention(store)}
    assert list(groups) == list(GROUPS)
    ids = {key: [op.id for op in group.operations] for key, group in groups.items()}
    # awaiting: the one running out first, first; the unposted card is there too
    assert ids[AWAITING] == [sooner.id, later.id, unposted.id]
    assert ids[UNKNOWN] == [unknown.id]
    assert ids[UNRESOLVED] == [unresolved.id]
    assert ids[CARD_FAILED] == [unposted.id]
    assert ids[DELIVERY_FAILED] == [undelivered.id]
    assert {key: group.count for key, group in groups.items()} == {
        AWAITING: 3,
        UNKNOWN: 1,
        UNRESOLVED: 1,
        CARD_FAILED: 1,
        DELIVERY_FAILED: 1,
    }
    capped = {group.key: group for group in await attention(store, limit=1)}
    assert capped[AWAITING].count == 3 and [op.id for op in capped[AWAITING].operations] == [
        sooner.id
    ]


async def test_recent_activity_is_what_changed_last(store: Store) -> None:
    old = await offered(store)
    newer = await offered(store)
    assert [op.id for op in await recent(store, limit=2)] == [newer.id, old.id]
    await store.cancel(old.id, "dev-agent")  # an old operation that changes moves up
    assert [op.id for op in await recent(store, limit=1)] == [old.id]


async def eth_order(store: Store) -> Operation:
    """An offered order whose terms name ETH-PERP (the others' name BTC-PERP)."""
    return await offered(
        store,
        projection={
            "title": "SELL 1 ETH-PERP",
            "terms": [{"name": "instrument", "value": "ETH-PERP"}],
            "simulated": True,
        },
    )


async def test_search_finds_an_id_an_instrument_or_a_counterparty_and_nothing_by_wildcard(
    store: Store,
) -> None:
    order = await offered(store)
    eth = await eth_order(store)
    message = await store.propose(draft(**message_draft_fields("100% on Friday")))

    async def found(text: str, **filters: object) -> list[str]:
        page = await search(store, text=text, **filters)  # type: ignore[arg-type]
        return [op.id for op in page.items]

    assert await found(order.id) == [order.id]
    assert await found(order.id[-8:].lower()) == [order.id]  # a piece of it, any case
    assert await found("eth-perp") == [eth.id]
    assert await found("BTC-PERP") == [order.id]
    assert await found("acme-supplier") == [message.operation.id]
    assert await found("100%") == [message.operation.id]
    assert await found("%") == [message.operation.id]  # a wildcard is a character
    assert await found("P_RP") == []  # as would "PERP" if "_" were a wildcard
    assert await found("nothing like it") == []
    assert await found("", state=State.AWAITING_CONFIRMATION) == [eth.id, order.id]


async def test_the_outcome_filter_reads_the_newest_outcome_and_pages_keep_it(
    store: Store,
) -> None:
    filled = [await claimed(store) for _ in range(3)]
    for op in filled:
        await observed(store, op, "filled", Execution.COMPLETED)
    recovered = await claimed(store)
    digest = await observed(store, recovered, "unknown", Execution.SUBMISSION_UNKNOWN)
    await reconciled(store, recovered, "filled", digest)
    pending = await claimed(store)
    await observed(store, pending, "unknown", Execution.SUBMISSION_UNKNOWN)

    seen: list[str] = []
    cursor = None
    while True:
        page = await search(store, outcome="filled", limit=2, cursor=cursor)
        seen += [op.id for op in page.items]
        if not page.has_more:
            break
        cursor = page.next_cursor
    assert seen == [op.id for op in reversed([*filled, recovered])]
    unknown = await search(store, outcome="unknown")
    assert [op.id for op in unknown.items] == [pending.id]
    assert [op.id for op in (await search(store, outcome="resting")).items] == []


async def test_a_search_looks_through_a_window_per_page_and_says_how_far_back(
    store: Store,
) -> None:
    # the oldest operation is the only match; the window is 3 operations a page
    eth = await eth_order(store)
    others = [await offered(store) for _ in range(6)]
    newest_first = list(reversed(others))

    pages = []
    cursor = None
    while True:
        page = await search(store, text="eth-perp", limit=2, cursor=cursor, window=3)
        pages.append(page)
        if not page.has_more:
            break
        cursor = page.next_cursor
    assert [[op.id for op in page.items] for page in pages] == [[], [], [eth.id]]
    assert [page.searched_to for page in pages] == [
        newest_first[2].created_at,
        newest_first[5].created_at,
        None,  # the window reached the oldest operation
    ]
    # with the state filter (an index serves it) the window counts only that state's
    assert [op.id for op in (await search(store, text="ETH", window=1)).items] == []
    by_state = await search(store, text="ETH", state=State.AWAITING_CONFIRMATION, window=7)
    assert [op.id for op in by_state.items] == [eth.id] and by_state.searched_to is None

    # more matches than the page inside the window: a normal page, cursor at its last row
    matches = await search(store, text="BTC-PERP", limit=2, window=3)
    assert [op.id for op in matches.items] == [op.id for op in newest_first[:2]]
    assert matches.has_more and matches.searched_to is None
