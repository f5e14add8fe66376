"""Dashboard sessions in the store: found by their cookie token only, ended by sign-out, by
idleness and by age on the store's clock; a sign-in's state is taken once, before it expires."""

from __future__ import annotations

from sqlalchemy import select

from store.authority.store import Store
from store.sessions.session_rows import WebSessionRow, WebSignInRow
from store.sessions.web_sessions import SIGN_IN_TTL_S, TOUCH_S, WebSessions, digest
from tests.support.signin import Clock

IDLE_S, MAX_S = 1800, 43200


def sessions_on(store: Store) -> tuple[WebSessions, Clock]:
    clock = Clock()
    store.clock = clock
    return WebSessions(store, idle_s=IDLE_S, max_s=MAX_S), clock


async def test_a_session_is_found_by_its_token_and_the_table_holds_only_its_hash(
    store: Store,
) -> None:
    sessions, _clock = sessions_on(store)
    token, opened = await sessions.open("ou_alice", "sandbox-tenant", "Alice")
    found = await sessions.find(token)
    assert found == opened and found.name == "Alice" and found.tenant_key == "sandbox-tenant"
    assert len(found.csrf_token) >= 32 and found.csrf_token != token
    assert await sessions.find(token + "x") is None and await sessions.find("") is None
    async with store.read() as conn:
        keys = (await conn.execute(select(WebSessionRow.token_hash))).scalars().all()
    assert keys == [digest(token)] and token not in keys


async def test_sign_out_ends_the_session_and_only_that_one(store: Store) -> None:
    sessions, _clock = sessions_on(store)
    token, _ = await sessions.open("ou_alice", "sandbox-tenant", "Alice")
    other, _ = await sessions.open("ou_alice", "sandbox-tenant", "Alice")
    assert await sessions.revoke(token) is True
    assert await sessions.find(token) is None
    assert await sessions.revoke(token) is False  # twice: nothing more to end
    assert await sessions.find(other) is not None


async def test_an_idle_session_ends_and_use_keeps_it_alive(store: Store) -> None:
    sessions, clock = sessions_on(store)
    token, _ = await sessions.open("ou_alice", "sandbox-tenant", "Alice")
    clock.advance(IDLE_S - 1)
    seen = await sessions.find(token)  # used just in time: seen now
    assert seen is not None
    clock.advance(IDLE_S - 1)
    assert await sessions.find(token) is not None
    clock.advance(IDLE_S)
    assert await sessions.find(token) is None
    clock.advance(-IDLE_S)  # no use in between moved nothing: still the last sighting
    assert await sessions.find(token) is not None


async def test_seeing_a_session_writes_at_most_once_a_minute(store: Store) -> None:
    sessions, clock = sessions_on(store)
    token, _ = await sessions.open("ou_alice", "sandbox-tenant", "Alice")
    before = store.writes
    for _ in range(5):
        clock.advance(TOUCH_S / 10)
        assert await sessions.find(token) is not None
    assert store.writes == before
    clock.advance(TOUCH_S)
    found = await sessions.find(token)
    assert found is not None and store.writes == before + 1


async def test_a_session_ends_at_its_absolute_lifetime_however_busy(store: Store) -> None:
    sessions, clock = sessions_on(store)
    token, _ = await sessions.open("ou_alice", "sandbox-tenant", "Alice")
    for _ in range(MAX_S // (IDLE_S // 2) - 1):
        clock.advance(IDLE_S // 2)
        assert await sessions.find(token) is not None
    clock.advance(IDLE_S // 2)
    assert await sessions.find(token) is None


async def test_sessions_past_their_lifetime_are_dropped_at_the_next_sign_in(
    store: Store,
) -> None:
    sessions, clock = sessions_on(store)
    await sessions.open("ou_alice", "sandbox-tenant", "Alice")
    clock.advance(MAX_S)
    new, _ = await sessions.open("ou_bob", "sandbox-tenant", "Bob")
    async with store.read() as conn:
        keys = (await conn.execute(select(WebSessionRow.token_hash))).scalars().all()
    assert keys == [digest(new)]


async def test_sessions_survive_a_new_ledger_on_the_same_database(store: Store) -> None:
    sessions, _clock = sessions_on(store)
    token, opened = await sessions.open("ou_alice", "sandbox-tenant", "Alice")
    again = WebSessions(store, idle_s=IDLE_S, max_s=MAX_S)
    assert await again.find(token) == opened


async def test_a_sign_in_state_is_taken_once_and_only_before_it_expires(store: Store) -> None:
    sessions, clock = sessions_on(store)
    await sessions.begin_sign_in("state-1", "v" * 43)
    await sessions.begin_sign_in("state-2", "w" * 43)
    assert await sessions.take_sign_in("state-1") == "v" * 43
    assert await sessions.take_sign_in("state-1") is None  # once
    assert await sessions.take_sign_in("unknown") is None
    clock.advance(SIGN_IN_TTL_S)
    assert await sessions.take_sign_in("state-2") is None  # expired
    async with store.read() as conn:
        hashes = (await conn.execute(select(WebSignInRow.state_hash))).scalars().all()
    assert hashes == []  # taken rows are gone, and no state is stored as given
