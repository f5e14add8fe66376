"""The long connection's wire protocol, as the unmodified lark-oapi `ws.Client` speaks it.

Owns the paths, frame methods and Lark codes, the pbbp2 frames the sandbox sends and parses
(DATA frames with fragments, pongs, acks), the `ClientConfig` it hands out, and the endpoint
error and handshake-rejection responses. The server that uses them (tickets, connections,
dispatch) is `LongConnHub` in larksandbox/longconn.py.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

# Importing any lark_oapi module runs `lark_oapi/__init__` and so captures the SDK's module-level
# event loop (docs/lark-reference.md §2.8); harmless here because the sandbox never runs the SDK client itself.
from lark_oapi.ws.pb.pbbp2_pb2 import Frame  # type: ignore[import-untyped]

ENDPOINT_PATH = "/callback/ws/endpoint"  # lark_oapi.ws.const.GEN_ENDPOINT_URI
CONNECT_PATH = "/callback/ws/connect"  # ours; the SDK just follows the URL it is given

METHOD_CONTROL = 0  # lark_oapi.ws.enum.FrameType
METHOD_DATA = 1

# Lark codes on the endpoint. The SDK (ws/client.py:295-303) retries 1 ("system busy") and
# 1000040343 (internal error) as ServerException; ANY other non-zero code is a ClientException,
# which it does not retry (start() raises it; during a reconnect it kills the receive task).
CODE_SYSTEM_BUSY = 1
# Field reports of the real gateway: 1000040345 "app_id or app_secret is invalid" for bad
# credentials, 1000040351 "Incorrect domain name" for an app id the domain does not host
# (a Lark-international app on Feishu). Both are ClientExceptions, like the real thing.
CODE_BAD_CREDENTIALS = 1000040345
CODE_UNKNOWN_APP = 1000040351

# Handshake rejection (ws/client.py:102-122): headers handshake-status / handshake-msg /
# handshake-autherrcode on a non-101 answer. status 514 + autherrcode 1000040350 is the
# connection limit -> ClientException (no retry); 514 with another autherrcode -> ServerException
# (retried with a fresh endpoint POST, hence a fresh ticket); 403 -> ClientException.
HANDSHAKE_AUTH_FAILED = 514
CODE_EXCEED_CONN_LIMIT = 1000040350
CODE_BAD_TICKET = 1000040346  # sandbox choice: any autherrcode but 1000040350 is retried

# websockets (the SDK's client) refuses messages over 1 MiB (max_size default) by closing the
# connection; leave room for the frame's headers.
MAX_FRAGMENT_BYTES = 1_000_000


@dataclass(frozen=True)
class Ack:
    code: int  # the ack payload's "code" (200 ok, 500 handler error)
    data: bytes | None  # base64-decoded "data" if present (the callback answer JSON bytes)
    biz_rt_ms: float | None  # the client's biz_rt header if present


@dataclass
class ClientConfig:
    """Sent in the endpoint response and in every pong payload; the SDK adopts it each time."""

    reconnect_count: int = -1
    reconnect_interval_s: int = 120
    reconnect_nonce_s: int = 30
    ping_interval_s: int = 120

    def to_lark(self) -> dict[str, int]:
        return {
            "ReconnectCount": self.reconnect_count,
            "ReconnectInterval": self.reconnect_interval_s,
            "ReconnectNonce": self.reconnect_nonce_s,
            "PingInterval": self.ping_interval_s,
        }


def parse_frame(data: bytes) -> Any | None:
    """The pbbp2 `Frame` in a websocket message, or None if it does not decode."""
    frame = Frame()
    try:
        frame.ParseFromString(data)
    except Exception:  # protobuf's DecodeError; a broken frame must not end the connection
        return None
    return frame


def build_data_frames(
    payload: bytes,
    *,
    message_id: str,
    trace_id: str,
    frame_type: str,
    service_id: int,
    fragment_bytes: int,
    seq_ids: Iterable[int],
) -> list[bytes]:
    """Serialized DATA frames for one message: one frame, or `sum` fragments with `seq` 0..sum-1.

    The SDK reassembles by message_id (ws/client.py:450-466) and only answers the completing
    fragment. An empty part would count as "missing" there, so parts are never empty.
    """
    parts = [payload[i : i + fragment_bytes] for i in range(0, len(payload), fragment_bytes)]
    parts = parts or [b""]
    out: list[bytes] = []
    for seq, (part, seq_id) in enumerate(zip(parts, seq_ids, strict=False)):
        frame = Frame()
        frame.SeqID = seq_id
        frame.LogID = seq_id
        frame.service = service_id
        frame.method = METHOD_DATA
        for key, value in (
            ("type", frame_type),
            ("message_id", message_id),
            ("trace_id", trace_id),
            ("sum", str(len(parts))),
            ("seq", str(seq)),
        ):
            header = frame.headers.add()
            header.key = key
            header.value = value
        frame.payload = part
        out.append(bytes(frame.SerializeToString()))
    return out


def build_pong(service_id: int, client_config: ClientConfig) -> bytes:
    """The serialized CONTROL pong answering a ping; its payload is the ClientConfig JSON."""
    frame = Frame()
    frame.SeqID = 0
    frame.LogID = 0
    frame.service = service_id
    frame.method = METHOD_CONTROL
    header = frame.headers.add()
    header.key = "type"
    header.value = "pong"
    frame.payload = json.dumps(client_config.to_lark()).encode()
    return bytes(frame.SerializeToString())


def parse_ack(payload: bytes, biz_rt: str | None) -> Ack | None:
    """The client's ack payload (`{"code":200,"data":"<base64>"}`), or None if it is not one."""
    try:
        body = json.loads(payload)
        code = int(body["code"])
        raw = body.get("data")
        data = base64.b64decode(raw, validate=True) if isinstance(raw, str) else None
        biz_rt_ms = float(biz_rt) if biz_rt is not None else None
    except (ValueError, KeyError, TypeError, binascii.Error):
        return None
    return Ack(code=code, data=data, biz_rt_ms=biz_rt_ms)


def lark_error(code: int, msg: str) -> web.Response:
    """An endpoint error as Lark answers it."""
    # Lark answers endpoint errors with HTTP 200; a non-200 status would be a ServerException.
    return web.json_response({"code": code, "msg": msg, "data": {}})


def handshake_error(auth_code: int, msg: str) -> web.Response:
    """A refused websocket handshake, with the headers the SDK reads."""
    # Any non-101 status makes websockets raise InvalidStatus; the SDK only reads the headers.
    return web.Response(
        status=403,
        text=msg,
        headers={
            "handshake-status": str(HANDSHAKE_AUTH_FAILED),
            "handshake-msg": msg,
            "handshake-autherrcode": str(auth_code),
        },
    )
