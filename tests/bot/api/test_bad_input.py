"""Bad input is a 4xx with the JSON error shape (an HTML page on /ops) and one log line, never a
5xx or a traceback, and it stores nothing (issue 10 items 7 and 12)."""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.api.app import RUNNER_OPTIONS, create_app
from store import Store, encode_cursor
from tests.support.api import TOKENS, auth, make_config
from tests.support.factories import draft, message_request, order_request
from tests.support.logs import logged_once_without_traceback

Client = TestClient[Any, Any]
# a cursor naming an id with a NUL byte, which PostgreSQL text cannot hold
NUL_ID_CURSOR = encode_cursor(datetime(2026, 1, 1, tzinfo=UTC), "01AB\x00")
# a timestamp that cannot be moved into UTC (OverflowError, a 500 before)
EDGE_OF_TIME_CURSOR = (
    base64.urlsafe_b64encode(b"9999-12-31T23:59:59-14:00|01HZZZZZZZZZZZZZZZZZZZZZZZ")
    .decode()
    .rstrip("=")
)


def assert_one_line(logs: pytest.LogCaptureFixture) -> None:
    assert logged_once_without_traceback(logs), [(r.name, r.getMessage()) for r in logs.records]


async def assert_json_error(response: Any, status: int, field: str | None = None) -> dict[str, Any]:
    assert response.status == status, await response.text()
    assert response.content_type == "application/json"
    error: dict[str, Any] = (await response.json())["error"]
    assert error["code"] and error["message"]
    if field is not None:
        assert field in {f["field"] for f in error["fields"]}, error
        assert all(f["reason"] and f["fix"] for f in error["fields"])
    return error


def nested(depth: int) -> str:
    """A proposal whose payload nests `depth` levels deep in total."""
    inner = '"x"'
    for _ in range(depth - 1):  # the body's own object is the first level
        inner = '{"k":' + inner + "}"
    body = order_request()
    body["payload"] = "__INNER__"
    return json.dumps(body).replace('"__INNER__"', inner)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(nested(65), id="65-levels"),
        pytest.param("[" * 100_000 + "]" * 100_000, id="100k-arrays"),
        pytest.param('{"a":' * 50_000 + "1" + "}" * 50_000, id="50k-objects"),
    ],
)
async def test_json_nested_deeper_than_64_is_a_422_before_it_is_parsed(
    client_for: Any, store: Store, logs: pytest.LogCaptureFixture, raw: str
) -> None:
    api = await client_for(make_config(http={"max_body_bytes": 1048576}))
    response = await api.post("/api/v1/operations", data=raw, headers=auth())
    error = await assert_json_error(response, 422, "$")
    assert "64" in error["fields"][0]["reason"]
    assert_one_line(logs)
    assert await store.count() == 0


async def test_json_nested_64_deep_is_parsed(api: Client, store: Store) -> None:
    response = await api.post("/api/v1/operations", data=nested(64), headers=auth())
    error = await assert_json_error(response, 422)
    assert all("64" not in f["reason"] for f in error.get("fields", []))  # refused on its merits


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(b'"Pay \\ud800 now"', id="escaped"),
        pytest.param(b'"Pay \xed\xa0\x80 now"', id="raw-utf8-surrogate"),
        pytest.param(b'"Pay \\udfff\\ud800 now"', id="reversed-pair"),
    ],
)
async def test_a_lone_surrogate_in_a_body_is_a_422_naming_the_field(
    api: Client, store: Store, logs: pytest.LogCaptureFixture, text: bytes
) -> None:
    body = message_request()
    body["payload"]["text"] = "__TEXT__"
    raw = json.dumps(body).encode().replace(b'"__TEXT__"', text)
    response = await api.post("/api/v1/operations", data=raw, headers=auth())
    error = await assert_json_error(response, 422, "payload.text")
    assert "surrogate" in error["fields"][0]["reason"]
    assert_one_line(logs)
    assert await store.count() == 0


async def test_a_lone_surrogate_in_a_key_is_refused_too(api: Client, store: Store) -> None:
    raw = json.dumps(order_request()).replace('"audience"', '"aud\\udc00"')
    response = await api.post("/api/v1/operations", data=raw, headers=auth())
    await assert_json_error(response, 422)
    assert await store.count() == 0


async def test_a_valid_surrogate_pair_is_an_ordinary_character(api: Client) -> None:
    body = message_request()
    raw = json.dumps(body).replace("Friday.", "Friday \\ud83d\\ude00")  # 😀 as JSON escapes
    response = await api.post("/api/v1/operations", data=raw, headers=auth())
    assert response.status == 201
    assert (await response.json())["payload"]["text"].endswith("Friday \U0001f600")


async def test_a_duplicate_key_is_a_422_naming_the_key_and_stores_nothing(
    api: Client, store: Store, logs: pytest.LogCaptureFixture
) -> None:
    # Which of the two quantities would the operator be shown? Neither: the body is refused.
    raw = json.dumps(order_request()).replace(
        '"quantity": "0.010"', '"quantity": "0.010", "quantity": "100"'
    )
    assert raw.count('"quantity"') == 2
    response = await api.post("/api/v1/operations", data=raw, headers=auth())
    error = await assert_json_error(response, 422, "payload.quantity")
    assert "twice" in error["fields"][0]["reason"]
    assert_one_line(logs)
    top = json.dumps(order_request()).replace(
        '"audience": "ops"', '"audience": "ops", "audience": "x"'
    )
    await assert_json_error(
        await api.post("/api/v1/operations", data=top, headers=auth()), 422, "audience"
    )
    assert await store.count() == 0


async def raw_request(port: int, head: bytes, body: bytes = b"") -> tuple[int, bytes, bytes]:
    """One HTTP/1.1 request written byte for byte (a client library would refuse these bytes)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode())
        writer.write(body)
        await writer.drain()
        response = await reader.read()
    finally:
        writer.close()
    headers, _, payload = response.partition(b"\r\n\r\n")
    status = int(headers.split(b" ", 2)[1])
    return status, headers, payload


@pytest.mark.parametrize(
    "header",
    [
        pytest.param(b"Authorization: Bearer \xff\xfe", id="authorization"),
        pytest.param(
            b"Authorization: Bearer " + TOKENS["DEV_AGENT_TOKEN"].encode() + b"\xff", id="token+ff"
        ),
        pytest.param(b"X-Request-Note: caf\xe9", id="other-header"),
    ],
)
async def test_non_utf8_header_bytes_are_a_400_not_a_500(
    api: Client, store: Store, logs: pytest.LogCaptureFixture, header: bytes
) -> None:
    good = b"Authorization: Bearer " + TOKENS["DEV_AGENT_TOKEN"].encode() + b"\r\n"
    extra = b"" if header.startswith(b"Authorization") else good
    head = b"POST /api/v1/operations HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra + header + b"\r\n"
    status, headers, payload = await raw_request(
        api.server.port, head, json.dumps(order_request()).encode()
    )
    assert status == 400, payload
    assert b"application/json" in headers
    error = json.loads(payload)["error"]
    assert error["code"] == "bad_header" and "UTF-8" in error["message"]
    assert "\xff" not in error["message"] and "caf" not in error["message"]  # never echoed
    assert_one_line(logs)
    assert await store.count() == 0


async def test_a_non_utf8_header_on_the_dashboard_is_an_html_400(
    api: Client, logs: pytest.LogCaptureFixture
) -> None:
    status, headers, payload = await raw_request(
        api.server.port, b"GET /ops HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Language: \xff\r\n"
    )
    assert status == 400 and b"text/html" in headers and b"UTF-8" in payload
    assert_one_line(logs)


@pytest.mark.parametrize(
    "query, field",
    [
        ("wait_s=\u0663", "wait_s"),  # ARABIC-INDIC DIGIT THREE: isdigit() and int() accept it
        ("wait_s=\u00b2", "wait_s"),  # SUPERSCRIPT TWO: isdigit() accepts it, int() raises
        ("wait_s=%EF%BC%91", "wait_s"),  # FULLWIDTH DIGIT ONE, percent-encoded
        ("wait_s=+1", "wait_s"),
        ("wait_s=%ff", "wait_s"),
    ],
)
async def test_non_ascii_digits_in_wait_s_are_a_422(
    api: Client, store: Store, logs: pytest.LogCaptureFixture, query: str, field: str
) -> None:
    op = (await store.propose(draft())).operation  # dev-agent's: "٣" used to wait 3 s
    response = await api.get(f"/api/v1/operations/{op.id}?{query}", headers=auth())
    await assert_json_error(response, 422, field)
    assert_one_line(logs)


@pytest.mark.parametrize(
    "query",
    [
        "limit=\u00b2",
        "limit=\u0663",
        "limit=%EF%BC%95",
        "limit=-1",
        "limit=1e1",
        "limit=" + "1" * 5000,
    ],
)
async def test_non_ascii_digits_in_limit_are_a_422(
    api: Client, logs: pytest.LogCaptureFixture, query: str
) -> None:
    response = await api.get(f"/api/v1/operations?{query}", headers=auth())
    await assert_json_error(response, 422, "limit")
    assert_one_line(logs)


@pytest.mark.parametrize(
    "cursor",
    ["garbage!!", "%ff%fe", "\u0663", "AAAA", "x" * 5000, NUL_ID_CURSOR, EDGE_OF_TIME_CURSOR],
)
async def test_an_invalid_cursor_is_a_422_on_the_api(
    api: Client, logs: pytest.LogCaptureFixture, cursor: str
) -> None:
    response = await api.get("/api/v1/operations", params={"cursor": cursor}, headers=auth())
    await assert_json_error(response, 422, "cursor")
    assert_one_line(logs)


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage!!",
        "%ff%fe",
        "\u0663",
        "AAAA",
        "<script>x</script>",
        NUL_ID_CURSOR,
        EDGE_OF_TIME_CURSOR,
    ],
)
async def test_an_invalid_dashboard_cursor_is_an_html_400(
    api: Client, store: Store, logs: pytest.LogCaptureFixture, cursor: str
) -> None:
    await store.propose(draft())
    response = await api.get("/ops", params={"cursor": cursor})
    assert response.status == 400
    assert response.content_type == "text/html"
    page = await response.text()
    assert "cursor" in page and "<script>x" not in page
    assert_one_line(logs)


@pytest.mark.parametrize("path", ["/api/v1/operations/01AB%00CD", "/api/v1/operations/%ED%A0%80"])
async def test_an_operation_id_no_store_could_hold_is_a_404(
    api: Client, logs: pytest.LogCaptureFixture, path: str
) -> None:
    await assert_json_error(await api.get(path, headers=auth()), 404)
    await assert_json_error(await api.post(f"{path}/cancel", headers=auth()), 404)
    response = await api.get(path.replace("/api/v1/operations", "/ops"))
    assert response.status == 404 and response.content_type == "text/html"


@pytest.mark.parametrize(
    "head",
    [
        pytest.param(b"GET /ops?token=secret-\xff HTTP/1.1\r\nHost: 127.0.0.1\r\n", id="url-bytes"),
        pytest.param(
            b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Name: x\r\n", id="header-name"
        ),
    ],
)
async def test_a_request_aiohttp_cannot_parse_is_one_log_line(
    store: Store, logs: pytest.LogCaptureFixture, head: bytes
) -> None:
    # Refused by aiohttp's parser before any handler: the bot's runner options make its
    # log record one line without a traceback (and without the request line: a query may
    # carry the dashboard token).
    server = TestServer(create_app(make_config(), store))
    await server.start_server(**RUNNER_OPTIONS)
    try:
        status, _, _ = await raw_request(server.port, head)
    finally:
        await server.close()
    assert status == 400
    assert_one_line(logs)
    assert "secret" not in logs.text
