"""Dashboard sessions and sign-ins under way, on both backends (tables: store/sessions/session_rows.py).

A session is found by the SHA-256 of its cookie token, so a copy of the table signs nobody in.
It ends when revoked (sign-out), when unused for `idle_s`, or `max_s` after its sign-in,
whichever comes first; times are the store's clock. `last_seen_at` moves at most once a
`TOUCH_S`, so browsing is not a write per page (the idle limit is kept to within that much).
A sign-in's `state` is likewise kept as a hash, with its PKCE verifier, and taken once.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, insert, select, update

from store.authority.store import Store
from store.sessions.session_rows import WebSessionRow, WebSignInRow

TOUCH_S = 60.0
SIGN_IN_TTL_S = 600.0  # from the redirect to Lark to the callback: a person picking an account


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass(frozen=True)
class WebSession:
    open_id: str
    tenant_key: str
    name: str
    signed_in_at: datetime
    last_seen_at: datetime
    csrf_token: str


SESSION_COLUMNS = (
    WebSessionRow.open_id,
    WebSessionRow.tenant_key,
    WebSessionRow.name,
    WebSessionRow.signed_in_at,
    WebSessionRow.last_seen_at,
    WebSessionRow.csrf_token,
)


class WebSessions:
    def __init__(self, store: Store, *, idle_s: float, max_s: float) -> None:
        self.store = store
        self.idle = timedelta(seconds=idle_s)
        self.max = timedelta(seconds=max_s)

    # -- sign-ins under way -------------------------------------------------------------

    async def begin_sign_in(self, state: str, code_verifier: str) -> None:
        now = self.store.clock()

        def work(conn: Connection) -> None:
            # the ones never completed go with each new one: the table stays small
            conn.execute(delete(WebSignInRow).where(WebSignInRow.expires_at <= now))
            conn.execute(
                insert(WebSignInRow).values(
                    state_hash=digest(state),
                    code_verifier=code_verifier,
                    expires_at=now + timedelta(seconds=SIGN_IN_TTL_S),
                )
            )

        await self.store.transact(work)

    async def take_sign_in(self, state: str) -> str | None:
        """The verifier of a sign-in under way, once: None if unknown, taken or expired."""
        now = self.store.clock()

        def work(conn: Connection) -> tuple[str, datetime] | None:
            found = conn.execute(
                delete(WebSignInRow)
                .where(WebSignInRow.state_hash == digest(state))
                .returning(WebSignInRow.code_verifier, WebSignInRow.expires_at)
            ).first()
            return None if found is None else (found[0], found[1])

        taken = await self.store.transact(work)
        if taken is None or taken[1] <= now:
            return None
        return taken[0]

    # -- sessions -----------------------------------------------------------------------

    async def open(self, open_id: str, tenant_key: str, name: str) -> tuple[str, WebSession]:
        """A new session: the cookie token (given once, never stored) and the session."""
        now = self.store.clock()
        token = secrets.token_urlsafe(32)
        session = WebSession(open_id, tenant_key, name, now, now, secrets.token_urlsafe(32))

        def work(conn: Connection) -> None:
            conn.execute(delete(WebSessionRow).where(WebSessionRow.signed_in_at <= now - self.max))
            conn.execute(
                insert(WebSessionRow).values(
                    token_hash=digest(token),
                    open_id=open_id,
                    tenant_key=tenant_key,
                    name=name,
                    signed_in_at=now,
                    last_seen_at=now,
                    csrf_token=session.csrf_token,
                    revoked=False,
                )
            )

        await self.store.transact(work)
        return token, session

    async def find(self, token: str, *, touch: bool = True) -> WebSession | None:
        """The live session of this cookie token, or None. `touch`: it is in use now (a page
        a person opened; not a page's own long poll, or an open tab would never idle out)."""
        if not token:
            return None
        now = self.store.clock()
        key = digest(token)

        def read(conn: Connection) -> WebSession | None:
            row = conn.execute(
                select(*SESSION_COLUMNS).where(
                    WebSessionRow.token_hash == key, WebSessionRow.revoked.is_(False)
                )
            ).first()
            return None if row is None else WebSession(*row)

        session = await self.store.fetch(read)
        if session is None:
            return None
        if now - session.signed_in_at >= self.max or now - session.last_seen_at >= self.idle:
            return None
        if touch and now - session.last_seen_at >= timedelta(seconds=TOUCH_S):

            def seen(conn: Connection) -> None:
                conn.execute(
                    update(WebSessionRow)
                    .where(WebSessionRow.token_hash == key, WebSessionRow.revoked.is_(False))
                    .values(last_seen_at=now)
                )

            await self.store.transact(seen)
        return session

    async def revoke(self, token: str) -> bool:
        """Sign-out: this session ends now (False: there was none to end)."""
        key = digest(token)

        def work(conn: Connection) -> bool:
            done = conn.execute(
                update(WebSessionRow)
                .where(WebSessionRow.token_hash == key, WebSessionRow.revoked.is_(False))
                .values(revoked=True)
            )
            return bool(done.rowcount)

        return await self.store.transact(work)
