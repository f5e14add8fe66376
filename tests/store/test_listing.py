"""Listing operations: the audience filter the text listener scopes `pending` with."""

from __future__ import annotations

from store.authority.envelope import Audience
from store.authority.store import Store
from store.lifecycle import State
from tests.support.factories import offered

DESK = Audience("desk", "oc_desk", ("ou_alice",))


async def test_only_the_named_audiences_operations_are_listed(store: Store) -> None:
    ops = [(await offered(store)).id for _ in range(3)]
    desk = [(await offered(store, audience=DESK)).id for _ in range(2)]

    async def listed(audiences: set[str] | None, limit: int = 50) -> list[str]:
        ids: list[str] = []
        cursor = None
        while True:
            page = await store.list_operations(
                state=State.AWAITING_CONFIRMATION, limit=limit, cursor=cursor, audiences=audiences
            )
            ids += [op.id for op in page.items]
            if not page.has_more:
                return ids
            cursor = page.next_cursor

    assert sorted(await listed({"ops"})) == sorted(ops)
    assert sorted(await listed({"desk"}, limit=1)) == sorted(desk)  # paging stays in scope
    assert sorted(await listed({"ops", "desk"})) == sorted(ops + desk)
    assert sorted(await listed(None)) == sorted(ops + desk)
    assert await listed(set()) == []  # no audience: nothing, never everything
