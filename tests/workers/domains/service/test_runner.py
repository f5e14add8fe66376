"""service.call through the real executor and the real store, against the example service
on loopback: one signed POST per confirmed call, its answer recorded; an answer lost after
the work is reconciled by the status endpoint, never by a second POST (unless the service is
idempotent); a service that cannot be asked is left to a person."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from examples.service.app import CALL_PATH, STATUS_PATH
from store import ExecutionLedger, Store, claim_id
from tests.support.service_calls import (
    BillingService,
    Hold,
    billing_service,
    claimed_call,
    refund,
    runner_context,
    service_table,
    settings_of,
)
from workers.domains.service.calls import Answer, answer_text
from workers.domains.service.runner import FENCED, RESENT, ServiceRunner
from workers.domains.service.settings import ServiceSettings
from workers.executor import ExecutionWorker


@pytest.fixture
async def billing(tmp_path: Path) -> AsyncIterator[BillingService]:
    async with billing_service(tmp_path) as service:
        yield service


def worker(store: Store, runner: ServiceRunner, not_found_after_s: float = 4.0) -> ExecutionWorker:
    return ExecutionWorker(
        store,
        {runner.kind: runner},
        submit_timeout_s=2.0,
        not_found_after_s=not_found_after_s,
        track_max_s=0.5,
    )


def runner_for(store: Store, settings: ServiceSettings, **context: Any) -> ServiceRunner:
    async def decision_of(operation_id: str) -> str | None:
        return await claim_id(store, operation_id)

    return ServiceRunner(settings, runner_context(store.clock, decision_of=decision_of, **context))


async def settle(
    store: Store, work: ExecutionWorker, operation_id: str, last: str, deadline_s: float = 20
) -> list[Any]:
    """Run the worker's passes until the operation's last outcome is `last`."""
    ledger = ExecutionLedger(store)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_s
    while True:
        outcomes = await ledger.outcomes(operation_id)
        if outcomes and outcomes[-1].status == last:
            return outcomes
        if loop.time() > deadline:
            raise AssertionError(f"outcomes {[o.status for o in outcomes]}, never {last}")
        if not await work.drain():
            await asyncio.sleep(0.05)


async def test_a_confirmed_call_is_one_signed_post_and_its_answer_is_recorded(
    store: Store, billing: BillingService
) -> None:
    settings = settings_of(service_table(billing))
    op = await claimed_call(store, settings, refund())
    [outcome] = await settle(store, worker(store, runner_for(store, settings)), op.id, "completed")
    [post] = billing.posts()
    key = f"cs-{op.id}"
    assert post["headers"]["Idempotency-Key"] == key
    assert post["headers"]["X-Countersign-Operation"] == op.id
    assert post["headers"]["X-Countersign-Signature"].startswith("sha256=")
    call = post["body"]
    assert call["client_id"] == key and call["operation_id"] == op.id
    assert call["arguments"] == refund()["arguments"]
    assert call["claim_id"] == await claim_id(store, op.id) and call["claim_id"]
    assert call["confirm_digest"] == op.confirm_digest
    assert call["confirmed_by"] == [{"open_id": "ou_alice", "name": "Alice"}]
    assert call["audience"] == "ops" and call["proposer"] == "dev-agent"
    [booked] = billing.refunds()
    assert booked["key"] == key and booked["amount"] == "120.00"
    assert outcome.detail["http_status"] == 200
    assert f'"refund_id":"rf_{key[-10:]}"' in outcome.detail["answer"]


async def test_a_4xx_is_refused_with_the_services_words(
    store: Store, billing: BillingService
) -> None:
    settings = settings_of(service_table(billing))
    runner = runner_for(store, settings)
    first = await claimed_call(store, settings, refund())
    await settle(store, worker(store, runner), first.id, "completed")
    second = await claimed_call(store, settings, refund())
    [outcome] = await settle(store, worker(store, runner), second.id, "refused")
    assert outcome.detail["http_status"] == 409
    assert outcome.detail["reason"] == "order ord_1042 was already refunded"
    assert len(billing.refunds()) == 1


async def test_an_answer_lost_after_the_work_is_reconciled_by_status_with_one_post(
    store: Store, billing: BillingService
) -> None:
    billing.billing.fail_after_work = 1
    settings = settings_of(service_table(billing))
    op = await claimed_call(store, settings, refund())
    outcomes = await settle(store, worker(store, runner_for(store, settings)), op.id, "completed")
    assert [o.status for o in outcomes] == ["unknown", "completed"]
    assert "HTTP 500" in outcomes[0].detail["reason"]
    assert outcomes[1].detail["reconciled_by"] == "status"
    assert outcomes[1].reconciles_digest == outcomes[0].outcome_digest
    assert "rf_" in outcomes[1].detail["answer"]
    assert len(billing.posts()) == 1 and len(billing.refunds()) == 1


async def test_without_a_status_endpoint_an_unknown_call_is_left_to_a_person(
    store: Store, billing: BillingService
) -> None:
    billing.billing.fail_after_work = 1
    settings = settings_of(service_table(billing, status=False))
    op = await claimed_call(store, settings, refund())
    outcomes = await settle(store, worker(store, runner_for(store, settings)), op.id, "unresolved")
    assert [o.status for o in outcomes] == ["unknown", "unresolved"]
    reason = outcomes[1].detail["reason"]
    assert (
        "the service has no status endpoint: a person must check whether billing ran refund"
        in reason
    )
    assert f"Idempotency-Key cs-{op.id}" in reason
    assert len(billing.posts()) == 1


async def test_an_idempotent_service_gets_the_same_call_again_with_the_same_key(
    store: Store, billing: BillingService
) -> None:
    billing.billing.fail_after_work = 1
    settings = settings_of(service_table(billing, status=False, idempotent=True))
    op = await claimed_call(store, settings, refund())
    outcomes = await settle(store, worker(store, runner_for(store, settings)), op.id, "completed")
    assert [o.status for o in outcomes] == ["unknown", "completed"]
    assert outcomes[1].detail["reason"] == RESENT
    first, again = billing.posts()
    assert first["body"] == again["body"]
    assert first["headers"]["Idempotency-Key"] == again["headers"]["Idempotency-Key"]
    assert len(billing.refunds()) == 1  # the receiver answered the repeat from its record


@pytest.fixture
async def silent(tmp_path: Path) -> AsyncIterator[str]:
    """An endpoint that takes calls and never answers in time (nothing reaches the ledger)."""
    release = asyncio.Event()

    async def hang(_request: web.Request) -> web.Response:
        await release.wait()
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/call", hang)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield f"http://127.0.0.1:{server.port}/call"
    finally:
        release.set()
        await server.close()


async def test_a_call_the_service_never_received_is_concluded_not_submitted(
    store: Store, billing: BillingService, silent: str
) -> None:
    settings = settings_of(service_table(billing, endpoint=silent))
    op = await claimed_call(store, settings, refund())
    outcomes = await settle(
        store,
        worker(store, runner_for(store, settings), not_found_after_s=3.0),
        op.id,
        "not_submitted",
    )
    assert [o.status for o in outcomes] == ["unknown", "not_submitted"]
    assert billing.refunds() == []


def quick(table: dict[str, Any]) -> dict[str, Any]:
    table["services"][0]["timeout_s"] = 1.0  # a held call is unknown after a second
    return table


async def test_a_call_held_past_the_timeout_is_fenced_and_refused_when_it_arrives(
    store: Store, billing: BillingService
) -> None:
    hold = Hold()
    billing.billing.delay = hold
    settings = settings_of(quick(service_table(billing)))  # not idempotent: never sent again
    op = await claimed_call(store, settings, refund())
    # unfenced, "never received" would wait not_found_after_s: only the fence concludes it now
    work = worker(store, runner_for(store, settings), not_found_after_s=3600)
    outcomes = await settle(store, work, op.id, "not_submitted")
    assert hold.arrived.is_set()  # the call did reach the service, and waits there
    assert [o.status for o in outcomes] == ["unknown", "not_submitted"]
    assert outcomes[1].detail == {
        "idempotency_key": f"cs-{op.id}",
        "reconciled_by": "status",
        "reason": FENCED,
    }
    assert outcomes[1].reconciles_digest == outcomes[0].outcome_digest
    assert all(heard.query.get("fence") == "1" for heard in billing.answered(STATUS_PATH))

    hold.release.set()  # the call goes on, after countersign said it never arrived
    [late] = await billing.answers(CALL_PATH, 1)
    assert late.status == 409  # the one booking attempt, refused
    assert len(billing.posts()) == 1 and billing.refunds() == []
    assert [o.status for o in await ExecutionLedger(store).outcomes(op.id)] == [
        "unknown",
        "not_submitted",
    ]


async def test_an_idempotent_service_inside_its_window_is_asked_unfenced_and_sent_again(
    store: Store, billing: BillingService
) -> None:
    hold = Hold()
    billing.billing.delay = hold
    settings = settings_of(quick(service_table(billing, idempotent=True)))
    op = await claimed_call(store, settings, refund())
    outcomes = await settle(store, worker(store, runner_for(store, settings)), op.id, "completed")
    assert [o.status for o in outcomes] == ["unknown", "completed"]
    assert outcomes[1].detail["reason"] == RESENT
    [asked] = billing.answered(STATUS_PATH)
    assert asked.query == {"idempotency_key": f"cs-{op.id}"}  # no fence: the re-send follows

    hold.release.set()  # the first call, late: the re-sent one's answer, booked once
    first, again = await billing.answers(CALL_PATH, 2)
    assert (first.status, again.status) == (200, 200)
    assert len(billing.refunds()) == 1


async def test_an_idempotent_service_past_its_window_is_fenced(
    store: Store, billing: BillingService
) -> None:
    settings = settings_of(service_table(billing, idempotent=True))
    op = await claimed_call(store, settings, refund())
    runner = runner_for(store, settings)
    window = timedelta(seconds=settings.services[0].idempotency_window_s)
    found = await runner.lookup(op, f"cs-{op.id}", store.clock() - window - timedelta(seconds=1))
    assert found is not None and found.status == "not_submitted"
    assert found.detail["reason"] == FENCED
    [asked] = billing.answered(STATUS_PATH)
    assert asked.query["fence"] == "1" and billing.posts() == []


async def test_nothing_is_sent_when_what_was_confirmed_no_longer_holds(
    store: Store, billing: BillingService
) -> None:
    settings = settings_of(service_table(billing))
    moved = settings_of(service_table(billing, endpoint=f"{billing.base_url}/elsewhere"))
    cases: list[tuple[ServiceSettings, dict[str, Any], str]] = [
        (moved, {}, "service_endpoint_changed"),
        (settings, {"environ": {}}, "service_secret_missing"),
        (settings_of(service_table(billing, audience="leads")), {}, "service_audience"),
    ]
    for now, context, code in cases:
        op = await claimed_call(store, settings, refund())
        runner = runner_for(store, now, **context)
        [outcome] = await settle(store, worker(store, runner), op.id, "preflight_rejected")
        assert outcome.detail["code"] == code, outcome.detail
    assert billing.posts() == []


async def test_an_address_inside_is_never_called_without_allow_internal(
    store: Store, billing: BillingService
) -> None:
    table = service_table(billing)
    table["services"][0]["allow_internal"] = False
    settings = settings_of(table)
    op = await claimed_call(store, settings, refund())
    [outcome] = await settle(store, worker(store, runner_for(store, settings)), op.id, "not_sent")
    assert "loopback" in outcome.detail["reason"] and billing.posts() == []


async def test_a_service_that_is_not_listening_was_not_sent_anything(
    store: Store, billing: BillingService
) -> None:
    settings = settings_of(service_table(billing, endpoint="http://127.0.0.1:9/call"))
    op = await claimed_call(store, settings, refund())
    [outcome] = await settle(store, worker(store, runner_for(store, settings)), op.id, "not_sent")
    assert "could not connect" in outcome.detail["reason"]


def test_an_answer_is_shown_compact_and_cut_visibly() -> None:
    # a service may answer with floats: they are only words here, never terms
    assert (
        answer_text(Answer(200, b'{"rate": 1.5, "id": "rf_1"}', False))
        == '{"id":"rf_1","rate":1.5}'
    )
    long = {"log": "x" * 5000}
    shown = answer_text(Answer(200, json.dumps(long).encode(), False))
    whole = len(json.dumps(long, separators=(",", ":")))
    assert len(shown.encode()) <= 2000 and shown.endswith(f"… (cut: {whole} bytes in all)")
    assert answer_text(Answer(502, b"<html>oops</html>", False)) == "<html>oops</html>"


async def test_a_huge_answer_is_read_up_to_a_cap_and_shown_cut(
    store: Store, billing: BillingService
) -> None:
    async def chatty(_request: web.Request) -> web.Response:
        return web.json_response({"log": "y" * 200_000})

    app = web.Application()
    app.router.add_post("/call", chatty)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        url = f"http://127.0.0.1:{server.port}/call"
        settings = settings_of(service_table(billing, endpoint=url))
        op = await claimed_call(store, settings, refund())
        [outcome] = await settle(
            store, worker(store, runner_for(store, settings)), op.id, "completed"
        )
    finally:
        await server.close()
    shown = outcome.detail["answer"]
    assert len(shown.encode()) <= 2000 and shown.startswith('{"log": "yyy') and "cut:" in shown
