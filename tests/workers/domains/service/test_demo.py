"""The demo's billing service: its table loads and passes the config checks, its refund
files as shown, and a confirmed refund through the real runner is booked once."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from store import ExecutionLedger, Store
from tests.support.service_calls import (
    claimed_call,
    refund,
    runner_context,
    service_table,
    settings_of,
)
from workers.domains import DOMAINS
from workers.domains.service.demo import SECRET_ENV
from workers.domains.service.runner import ServiceRunner
from workers.domains.service.schema import ServiceCallV1
from workers.domains.service.settings import ServiceSettings
from workers.executor import ExecutionWorker

CHATS = {"ops": "oc_ops", "counterparty": "oc_acme"}


async def test_the_demo_serves_a_refund_and_books_it_once(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the demo keeps a secret already exported (and sets one otherwise): restored after
    monkeypatch.setenv(SECRET_ENV, "demo-billing-secret-0123456789")
    plugin = DOMAINS["service.call"]
    setup = plugin.demo(CHATS, tmp_path)
    assert setup is not None and setup.environ == {SECRET_ENV: "demo-billing-secret-0123456789"}
    settings = ServiceSettings.model_validate(setup.table)
    assert plugin.config_problems(settings) == []
    [refund] = setup.proposals
    stop = asyncio.Event()
    [serving] = setup.background
    task = asyncio.create_task(serving(stop))
    try:
        op = await claimed_call(store, settings, dict(refund.payload))
        runner = ServiceRunner(settings, runner_context(store.clock, environ=setup.environ))
        worker = ExecutionWorker(store, {runner.kind: runner}, submit_timeout_s=2.0)
        await worker.drain()
        [outcome] = await ExecutionLedger(store).outcomes(op.id)
    finally:
        stop.set()
        await task
    assert outcome.status == "completed"
    assert "rf_" in outcome.detail["answer"]


def test_audience_and_expiry_come_from_the_service_and_its_action() -> None:
    plugin = DOMAINS["service.call"]
    table = service_table(None)
    table["services"][0]["actions"][0]["expires_in_s"] = 600
    call = ServiceCallV1.model_validate(refund())
    assert plugin.audiences(call, settings_of(table)) == ["ops"]
    assert plugin.expires_in_s(call, settings_of(table)) == 600
    anyone = service_table(None, audience=None)
    assert plugin.audiences(call, settings_of(anyone)) is None
    assert plugin.expires_in_s(call, settings_of(anyone)) is None
