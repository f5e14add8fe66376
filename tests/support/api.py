"""The HTTP API's test configuration: proposers and their tokens, and a proposal's POST.

The fixtures that serve the app (venue, client_for, api) are in tests/bot/api/conftest.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aiohttp.test_utils import TestClient

from bot.config import Config, parse, resolve

TOKENS = {
    "DEV_AGENT_TOKEN": "dev-token-0123456789",
    "OTHER_AGENT_TOKEN": "other-token-0123456789",
    "NARROW_AGENT_TOKEN": "narrow-token-0123456789",
}


def settings_data(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "audiences": [
            {"name": "ops", "chat_id": "oc_ops", "operators": ["ou_alice", "ou_bob"]},
            {"name": "treasury", "chat_id": "oc_treasury", "operators": ["ou_carol"]},
        ],
        "proposers": [
            {"name": "dev-agent", "token_env": "DEV_AGENT_TOKEN"},
            {"name": "other-agent", "token_env": "OTHER_AGENT_TOKEN"},
            {
                "name": "narrow-agent",
                "token_env": "NARROW_AGENT_TOKEN",
                "kinds": ["message.send"],
                "audiences": ["ops"],
            },
        ],
        "domains": {
            "finance": {"accounts": [{"name": "sim-main", "venue": "sim", "budget": "100000"}]},
            "message": {
                "destinations": [
                    {
                        "name": "acme",
                        "chat_id": "oc_acme",
                        "counterparty": "acme-supplier",
                        "ops_chat_id": "oc_ops",
                    }
                ]
            },
        },
    }
    data.update(overrides)
    return data


def make_config(**overrides: Any) -> Config:
    return resolve(parse(settings_data(**overrides)), TOKENS)


def resolve_with(dashboard_token: str, **overrides: Any) -> Config:
    """A config whose environment also holds a dashboard token, in variable DASH."""
    return resolve(parse(settings_data(**overrides)), {**TOKENS, "DASH": dashboard_token})


def auth(token: str = TOKENS["DEV_AGENT_TOKEN"]) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


ClientFactory = Callable[..., Any]


Client = TestClient[Any, Any]


async def post(api: Client, body: Any, token: str = TOKENS["DEV_AGENT_TOKEN"]) -> tuple[int, Any]:
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    response = await api.post("/api/v1/operations", data=data, headers=auth(token))
    return response.status, await response.json()
