"""Assemble the sandbox: `POST /info`, `POST /exchange` (with the queued faults), the control API."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

from hlsandbox import control, exchange, info
from hlsandbox.faults import Fault, Faults, IpWeights
from hlsandbox.numbers import WireError
from hlsandbox.state import RequestRecord, Venue

VENUE_KEY = web.AppKey("venue", Venue)
FAULTS_KEY = web.AppKey("faults", Faults)
WEIGHTS_KEY = web.AppKey("weights", IpWeights)
UNDESERIALIZABLE = "Failed to deserialize the JSON body into the target type"
# how often a held (drop_answer) connection looks whether its client gave up
HOLD_CHECK_S = 0.05


def answer(outcome: exchange.Outcome) -> web.Response:
    if outcome.http_status == 422:
        return web.Response(status=422, text=str(outcome.body))
    return web.Response(
        status=outcome.http_status,
        text=json.dumps(outcome.body),
        content_type="application/json",
    )


def too_many() -> web.Response:
    return web.Response(status=429, text="null", content_type="application/json")


async def read_json(request: web.Request) -> Any:
    try:
        return json.loads(await request.read())
    except ValueError:
        raise WireError("body: not JSON") from None


def charge(request: web.Request, weight: int) -> bool:
    venue = request.app[VENUE_KEY]
    return request.app[WEIGHTS_KEY].charge(
        request.remote or "?", weight, venue.now_ms(), venue.limits.ip_weight_per_min
    )


async def info_endpoint(request: web.Request) -> web.Response:
    venue = request.app[VENUE_KEY]
    try:
        body = await read_json(request)
        result = info.answer(venue, body)
    except WireError:
        return web.Response(status=422, text=UNDESERIALIZABLE)
    if not charge(request, info.weight(body["type"], result)):
        return too_many()
    return web.json_response(result)


def batch_of(action: dict[str, Any] | None) -> list[Any]:
    """The orders or cancels an action carries (an /exchange request weighs 1 per 40 of them)."""
    for key in ("orders", "cancels"):
        items = action.get(key) if action is not None else None
        if isinstance(items, list):
            return items
    return []


def records_for(venue: Venue, payload: Any) -> list[RequestRecord]:
    """One record per cloid an order request names, kept whatever becomes of the request."""
    action = payload.get("action") if isinstance(payload, dict) else None
    if not isinstance(action, dict) or action.get("type") != "order":
        return []
    nonce = payload.get("nonce")
    records = []
    for raw in batch_of(action):
        cloid = raw.get("c") if isinstance(raw, dict) else None
        if isinstance(cloid, str):
            record = RequestRecord(nonce if isinstance(nonce, int) else -1)
            venue.requests.setdefault(cloid.lower(), []).append(record)
            records.append(record)
    return records


def settle(records: list[RequestRecord], outcome: exchange.Outcome) -> exchange.Outcome:
    for record in records:
        record.committed, record.answer = outcome.committed, outcome.body
    return outcome


def deliver(venue: Venue, payload: Any, drop_fee: bool = False) -> exchange.Outcome:
    """One delivery of the body to the venue, recorded against the cloids it names."""
    records = records_for(venue, payload)
    return settle(records, exchange.process(venue, payload, drop_fee=drop_fee))


async def exchange_endpoint(request: web.Request) -> web.StreamResponse:
    venue, faults = request.app[VENUE_KEY], request.app[FAULTS_KEY]
    try:
        payload = await read_json(request)
    except WireError:
        return web.Response(status=422, text=UNDESERIALIZABLE)
    action = payload.get("action") if isinstance(payload, dict) else None
    if not isinstance(action, dict):
        action = None
    if not charge(request, 1 + len(batch_of(action)) // 40):
        settle(records_for(venue, payload), exchange.RATE_LIMITED)  # it arrived, and was refused
        return too_many()
    fault = faults.take(action)
    if fault is None:
        return answer(deliver(venue, payload))
    return await faulted(request, fault, payload)


async def faulted(request: web.Request, fault: Fault, payload: Any) -> web.StreamResponse:
    venue, faults = request.app[VENUE_KEY], request.app[FAULTS_KEY]
    if fault.kind == "rate_limited":
        settle(records_for(venue, payload), exchange.RATE_LIMITED)
        return too_many()
    if fault.kind == "drop_fee":
        return answer(deliver(venue, payload, drop_fee=True))
    if fault.kind == "deliver_twice":
        deliver(venue, payload)
        return answer(deliver(venue, payload))
    if fault.kind == "error_5xx_after_commit":
        deliver(venue, payload)
        return web.Response(status=500, text="Internal Server Error")
    if fault.kind == "delay_commit":
        records = records_for(venue, payload)  # it arrived now; it commits later

        def commit() -> exchange.Outcome:
            return settle(records, exchange.process(venue, payload))

        return answer(await delayed(faults, commit, fault.delay_ms))
    deliver(venue, payload)  # drop_answer: committed, never answered
    return await never_answer(request, faults, close=fault.close)


async def delayed(
    faults: Faults, commit: Callable[[], exchange.Outcome], delay_ms: int | None
) -> exchange.Outcome:
    """In flight: nothing commits now; later (or at `release`) it does, answering if still asked."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[exchange.Outcome] = loop.create_future()
    faults.pending.add(future)

    def land() -> None:
        if not future.done():
            future.set_result(commit())

    if delay_ms is None:
        faults.held.append(land)
    else:
        loop.call_later(delay_ms / 1000, land)
    try:
        return await asyncio.shield(future)
    finally:
        faults.pending.discard(future)


async def never_answer(request: web.Request, faults: Faults, *, close: bool) -> web.StreamResponse:
    transport = request.transport
    if not close:
        # held until the client gives up (its side closes) or the sandbox stops
        while transport is not None and not transport.is_closing():
            try:
                await asyncio.wait_for(faults.stopping.wait(), HOLD_CHECK_S)
                break
            except TimeoutError:
                continue
    if transport is not None:
        transport.close()
    raise asyncio.CancelledError  # nothing is written: the connection ends without a response


def build_app(venue: Venue | None = None) -> web.Application:
    app = web.Application()
    app[VENUE_KEY] = venue or Venue()
    app[FAULTS_KEY] = Faults()
    app[WEIGHTS_KEY] = IpWeights()
    app.router.add_post("/info", info_endpoint)
    app.router.add_post("/exchange", exchange_endpoint)
    control.add_routes(app, VENUE_KEY, FAULTS_KEY)

    async def stop_faults(_app: web.Application) -> None:
        app[FAULTS_KEY].stop()

    app.on_shutdown.append(stop_faults)
    return app
