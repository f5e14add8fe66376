"""`/readyz` and `/metrics` answer from memory (issue 34): no statement on the request, the
store's counts from a summary refreshed in the background with its age, and a summary the
store cannot refresh turns `/readyz` not ready.
"""

from __future__ import annotations

import contextlib
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import event

from bot.api.app import create_app
from bot.api.keys import HEALTH_KEY
from store import Store, open_store
from tests.support.api import ClientFactory, make_config, post
from tests.support.backends import Backend
from tests.support.factories import order_request
from tests.support.waiting import eventually

Client = TestClient[Any, Any]
REQUESTS = 25
AGE = "countersign_store_summary_age_seconds"


async def readyz(api: Client) -> tuple[int, dict[str, Any]]:
    response = await api.get("/readyz")
    return response.status, await response.json()


async def gauges(api: Client) -> dict[str, float]:
    response = await api.get("/metrics")
    assert response.status == 200
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(await response.text())
        for sample in family.samples
        if not sample.labels
    }


@contextlib.contextmanager
def statements_on(store: Store) -> Any:
    """Every statement the store's engine sends while the block runs."""
    sent: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        sent.append(statement)

    event.listen(store.engine.sync_engine, "before_cursor_execute", count)
    try:
        yield sent
    finally:
        event.remove(store.engine.sync_engine, "before_cursor_execute", count)


async def test_readyz_and_metrics_send_no_statement_on_the_request(
    store: Store, client_for: ClientFactory
) -> None:
    # a period longer than the test: no refresh runs between the requests
    config = make_config(http={"summary_period_s": 300, "summary_stale_after_s": 900})
    api: Client = await client_for(config)
    with statements_on(store) as sent:
        for _ in range(REQUESTS):
            status, body = await readyz(api)
            assert status == 200, body
            assert AGE in await gauges(api)
        assert sent == []
        await api.app[HEALTH_KEY].summary.refresh()  # off the request, the listener sees it
        assert len(sent) >= 5  # unknowns, unresolved, card backlog and failures, deliveries
    assert body["components"]["store"]["state"] == "ok"
    assert body["components"]["outbox"]["card_backlog"] == 0


async def test_the_summary_follows_the_store_in_the_background_and_shows_its_age(
    store: Store, client_for: ClientFactory
) -> None:
    api: Client = await client_for(make_config(http={"summary_period_s": 0.1}))
    status, body = await readyz(api)
    assert status == 200, body
    shown = body["components"]["store"]
    assert shown["summary_age_s"] >= 0 and shown["summary_at"] is not None
    assert "delivered" not in body["components"]["deliveries"]  # history, not counted
    before = await gauges(api)
    assert before[AGE] >= 0 and before["countersign_outbox_backlog"] == 0

    created, answer = await post(api, order_request("summary"))
    assert created == 201, answer

    async def counted() -> bool:  # no request asks the store: a refresh brings it
        _, now = await readyz(api)
        return bool(now["components"]["outbox"]["card_backlog"] == 1)

    await eventually(counted)
    assert (await gauges(api))["countersign_outbox_backlog"] == 1


async def test_a_summary_the_store_cannot_refresh_turns_readyz_not_ready(
    store: Store, backend: Backend
) -> None:
    # a store of its own whose pool lends two connections: holding both, every read waits
    small = await open_store(backend.url, schema=backend.schema, pool_size=1)
    config = make_config(http={"summary_period_s": 0.1, "summary_stale_after_s": 1.0})
    api: Client = TestClient(TestServer(create_app(config, small)))
    await api.start_server()
    try:

        async def ready() -> bool:
            return (await readyz(api))[0] == 200

        await eventually(ready)
        async with small.engine.connect(), small.engine.connect():

            async def stale() -> bool:
                return (await readyz(api))[0] == 503

            await eventually(stale)
            status, body = await readyz(api)
            shown = body["components"]["store"]
            assert (status, body["status"], shown["state"]) == (503, "unavailable", "stale")
            assert shown["summary_age_s"] > 1.0
            assert body["components"]["outbox"] == {"state": "unknown"}
            assert (await gauges(api))[AGE] > 1.0
            assert "countersign_outbox_backlog" not in await gauges(api)
        await eventually(ready)  # the store lends again: the next refresh makes it ready
    finally:
        await api.close()
        await small.close()
