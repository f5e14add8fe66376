"""The delivery worker's webhook target: resolved once, checked, connected to as checked.

The worker runs against the test store (both backends) with a resolver the test controls,
and real HTTP receivers on loopback addresses: what a receiver saw is what was sent.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from ipaddress import ip_address, ip_network
from typing import Any

import pytest
import trustme
from aiohttp import web
from aiohttp.test_utils import TestServer

from store import CallbackRoute, Click, Decided, Delivery, DeliveryLedger, Source, Store
from tests.support.factories import offered
from tests.support.processes import free_port
from workers.deliveries import DeliveryWorker
from workers.targets import Address

SECRET = "worker-callback-secret-0123456789"


@dataclass
class Receiver:
    host: str
    port: int = 0
    seen: list[dict[str, str]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append({"path": request.path, "host": request.headers.get("Host", "")})
        return web.json_response({"ok": True})


@pytest.fixture
async def listen() -> AsyncIterator[Callable[..., Any]]:
    servers: list[TestServer] = []

    async def start(host: str, port: int = 0, tls: ssl.SSLContext | None = None) -> Receiver:
        receiver = Receiver(host)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", receiver.handle)
        server = TestServer(app, host=host, port=port)
        await server.start_server(ssl=tls)
        servers.append(server)
        assert server.port is not None
        receiver.port = server.port
        return receiver

    yield start
    for server in servers:
        await server.close()


async def pair(listen: Callable[..., Any]) -> tuple[Receiver, Receiver]:
    """Receivers on 127.0.0.2 and 127.0.0.1 at the same port (one URL, two places)."""
    for _ in range(20):
        second: Receiver = await listen("127.0.0.2")
        try:
            first: Receiver = await listen("127.0.0.1", second.port)
        except OSError:  # that port is taken on 127.0.0.1: try another one
            continue
        return second, first
    raise AssertionError("no port free on both 127.0.0.1 and 127.0.0.2")


@dataclass
class Resolver:
    """Answers from a script, one list per call, the last one repeated; records the calls."""

    script: list[list[str]] | None = None
    error: OSError | None = None
    calls: list[tuple[str, int]] = field(default_factory=list)

    async def __call__(self, host: str, port: int) -> list[Address]:
        self.calls.append((host, port))
        if self.error is not None:
            raise self.error
        assert self.script
        answer = self.script[min(len(self.calls), len(self.script)) - 1]
        return [ip_address(a) for a in answer]


async def concluded(store: Store, url: str) -> Delivery:
    """A declined operation whose conclusion goes to `url`: one webhook delivery, due now."""
    op = await offered(
        store, source=Source("dev-agent", f"r-{url}", callback=CallbackRoute(url, "dev"))
    )
    decided = await store.reject(Click(op.id, "reject", op.confirm_digest, "ou_bob"))
    assert isinstance(decided, Decided)
    [delivery] = await DeliveryLedger(store).find(operation_id=op.id)
    return delivery


def worker(
    store: Store, resolve: Resolver, allow: list[str], tls: ssl.SSLContext | None = None
) -> DeliveryWorker:
    return DeliveryWorker(
        store,
        replies=None,
        secrets=lambda _proposer, _ref: SECRET,
        allow_internal=[ip_network(n) for n in allow],
        resolve=resolve,
        timeout_s=5.0,
        tls=tls,
    )


async def test_the_connection_goes_to_the_address_checked_not_to_a_second_answer(
    store: Store, listen: Callable[..., Any]
) -> None:
    # DNS rebinding: the first answer passes the check (127.0.0.2 is allowed here), every
    # later one points at 127.0.0.1 (refused). A second lookup, by us or by the HTTP client
    # (whose own resolver says 127.0.0.1 for localhost), would land on `inside`.
    checked, inside = await pair(listen)
    resolve = Resolver([["127.0.0.2"], ["127.0.0.1"]])
    delivery = await concluded(store, f"http://localhost:{checked.port}/hook")

    assert await worker(store, resolve, ["127.0.0.2/32"]).drain() == 1

    assert resolve.calls == [("localhost", checked.port)]  # resolved exactly once
    assert checked.seen == [{"path": "/hook", "host": f"localhost:{checked.port}"}]
    assert inside.seen == []
    done = await DeliveryLedger(store).get(delivery.id)
    assert done is not None and done.state == "delivered"
    # the audit log says the conclusion reached its proposer, naming what was delivered
    [entry] = [e for e in await store.audit(delivery.operation_id) if e.event.startswith("deli")]
    assert (entry.event, entry.actor) == ("delivered:webhook", "system:deliveries")
    assert entry.evidence == delivery.outcome_digest


async def test_one_inside_answer_among_outside_ones_refuses_the_target_for_good(
    store: Store, listen: Callable[..., Any]
) -> None:
    receiver: Receiver = await listen("127.0.0.1")
    resolve = Resolver([["93.184.216.34", "127.0.0.1"]])
    delivery = await concluded(store, f"http://localhost:{receiver.port}/hook")

    await worker(store, resolve, []).drain()

    refused = await DeliveryLedger(store).get(delivery.id)
    assert refused is not None and refused.state == "failed" and refused.attempts == 1
    assert refused.last_error is not None and "127.0.0.1 is loopback" in refused.last_error
    assert receiver.seen == []


async def test_a_failed_lookup_is_a_failed_attempt_retried_later(
    store: Store, listen: Callable[..., Any]
) -> None:
    receiver: Receiver = await listen("127.0.0.1")
    resolve = Resolver(error=socket.gaierror(socket.EAI_AGAIN, "Temporary failure"))
    delivery = await concluded(store, f"http://localhost:{receiver.port}/hook")

    await worker(store, resolve, ["127.0.0.0/8"]).drain()

    pending = await DeliveryLedger(store).get(delivery.id)
    assert pending is not None and pending.state == "pending" and pending.attempts == 1
    assert pending.last_error is not None and "resolving the callback host" in pending.last_error
    assert receiver.seen == []


async def test_a_failed_connection_logs_the_origin_never_the_path_or_query(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    # receivers often carry a credential in the path or query (hook URLs, ?token=)
    port = free_port()  # nothing listens on it
    url = f"http://localhost:{port}/hooks/T0-path-secret?token=query-secret"
    delivery = await concluded(store, url)

    await worker(store, Resolver([["127.0.0.1"]]), ["127.0.0.0/8"]).drain()

    failed = await DeliveryLedger(store).get(delivery.id)
    assert failed is not None and failed.state == "pending" and failed.attempts == 1
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert f"http://localhost:{port}" in logged
    assert "path-secret" not in logged and "query-secret" not in logged


@pytest.mark.parametrize(
    "url",
    [
        "http://2130706433:{port}/hook",
        "https://0x7f.1:{port}/hook",
        "http://user@127.0.0.1:{port}/",
    ],
)
async def test_a_stored_url_that_no_longer_parses_is_refused_for_good(
    store: Store, listen: Callable[..., Any], url: str
) -> None:
    # intake refuses these; a row stored before that rule is refused at delivery too
    receiver: Receiver = await listen("127.0.0.1")
    resolve = Resolver([["127.0.0.1"]])
    delivery = await concluded(store, url.format(port=receiver.port))

    await worker(store, resolve, ["127.0.0.0/8"]).drain()

    refused = await DeliveryLedger(store).get(delivery.id)
    assert refused is not None and refused.state == "failed" and refused.attempts == 1
    assert refused.last_error is not None and "callback URL refused" in refused.last_error
    assert receiver.seen == [] and resolve.calls == []


async def tls_receiver(
    listen: Callable[..., Any], certified_name: str
) -> tuple[Receiver, ssl.SSLContext, list[str | None]]:
    """An https receiver on 127.0.0.1 whose certificate names `certified_name`, a client
    context trusting its CA, and the SNI names the receiver is asked for."""
    ca = trustme.CA()
    client = ssl.create_default_context()
    ca.configure_trust(client)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(certified_name).configure_cert(server)
    names: list[str | None] = []

    def record(_socket: Any, server_name: str | None, _context: Any) -> None:
        names.append(server_name)

    server.sni_callback = record
    receiver: Receiver = await listen("127.0.0.1", tls=server)
    return receiver, client, names


@pytest.mark.parametrize(
    ("certified_name", "state"), [("hooks.example", "delivered"), ("other.example", "pending")]
)
async def test_tls_to_the_pinned_address_checks_the_certificate_against_the_host_name(
    store: Store, listen: Callable[..., Any], certified_name: str, state: str
) -> None:
    receiver, client, names = await tls_receiver(listen, certified_name)
    resolve = Resolver([["127.0.0.1"]])
    delivery = await concluded(store, f"https://hooks.example:{receiver.port}/hook")

    await worker(store, resolve, ["127.0.0.0/8"], client).drain()

    result = await DeliveryLedger(store).get(delivery.id)
    assert result is not None and (result.state, result.attempts) == (state, 1), result
    assert names == ["hooks.example"]  # SNI: the host name, not the address connected to
    if state == "delivered":
        assert receiver.seen == [{"path": "/hook", "host": f"hooks.example:{receiver.port}"}]
    else:  # a certificate for another name: the handshake fails, no request is sent
        assert result.last_error is not None and "certificate" in result.last_error.lower()
        assert receiver.seen == []
