"""service.call in `countersign demo`: a billing service on a loopback port (demo_service.py),
a `billing` service naming it, and one refund to confirm."""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
from collections.abc import Mapping
from pathlib import Path

from workers.domains.base import DemoSetup, Example
from workers.domains.service.demo_service import CALL_PATH, STATUS_PATH, DemoBilling, serve
from workers.domains.service.examples import REFUND, REFUND_ARGUMENTS

SECRET_ENV = "COUNTERSIGN_DEMO_BILLING_SECRET"


def demo_setup(chats: Mapping[str, str], workdir: Path) -> DemoSetup:
    # one already exported is kept; DemoSetup.environ hands it to the demo's processes
    secret = os.environ.get(SECRET_ENV) or secrets.token_hex(32)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))  # bound now, so the table can name the port
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    billing = DemoBilling(secret)

    async def serving(stop: asyncio.Event) -> None:
        await serve(billing, sock, stop)

    table: dict[str, object] = {
        "services": [
            {
                "name": "billing",
                "audience": "ops",
                "endpoint": f"{base}{CALL_PATH}",
                "status_endpoint": f"{base}{STATUS_PATH}",
                "secret_env": SECRET_ENV,
                "allow_internal": True,  # the demo's service is on loopback
                "actions": [
                    {
                        "name": "refund",
                        "title": "Refund",
                        "title_zh": "退款",
                        "arguments": REFUND_ARGUMENTS,
                        "expires_in_s": 900,
                    }
                ],
            }
        ]
    }
    return DemoSetup(
        table=table,
        background=(serving,),
        proposals=(Example("refund", "Refund 120.00 USD on order ord_1042", REFUND),),
        environ={SECRET_ENV: secret},
        expect={"refund": ("Done by the service", "booked")},
    )
