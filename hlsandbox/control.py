"""Control API under /hlsandbox/api/: accounts, agents, marks, liquidity, fees, limits, faults,
the clock, and what the venue saw (JSON). A refused body changes nothing and says which field
to fix (HTTP 422, {"error": ...}); an unknown account is 404."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

from aiohttp import web

from hlsandbox import matching, views
from hlsandbox.faults import Faults, parse_fault
from hlsandbox.numbers import WireError, parse_decimal, wire
from hlsandbox.state import Venue

PREFIX = "/hlsandbox/api"
ADDRESS = re.compile(r"^0x[0-9a-fA-F]{40}$")
LIMIT_FIELDS = ("ip_weight_per_min", "address_actions", "nonce_window")


class Refused(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status


def address(body: dict[str, Any], field: str) -> str:
    value = body.get(field)
    if not isinstance(value, str) or not ADDRESS.match(value):
        raise Refused(422, f"{field}: an address, 0x and 40 hex digits")
    return value.lower()


def decimal(body: dict[str, Any], field: str, *, positive: bool = False) -> Decimal:
    try:
        value = parse_decimal(body.get(field), field)
    except WireError as error:
        raise Refused(422, f'{error}: send it as a string, e.g. "10000"') from None
    if value < 0 or (positive and value == 0):
        raise Refused(422, f"{field}: must be {'positive' if positive else 'at least 0'}")
    return value


def coin(venue: Venue, body: dict[str, Any]) -> str:
    name = body.get("coin")
    if name not in venue.assets:
        raise Refused(422, f"coin: one of {', '.join(venue.assets)}")
    return str(name)


def account_view(venue: Venue, address: str) -> dict[str, Any]:
    account = venue.accounts[address]
    agents = sorted(agent for agent, owner in venue.agents.items() if owner == address)
    return {
        "address": address,
        "usdc": wire(account.usdc),
        "agents": agents,
        "positions": {c: wire(p.szi) for c, p in account.positions.items()},
    }


def state(venue: Venue, faults: Faults, _body: dict[str, Any]) -> Any:
    return {
        "now_ms": venue.now_ms(),
        "marks": {c: wire(px) for c, px in venue.marks.items()},
        "liquidity": {c: None if v is None else wire(v) for c, v in venue.liquidity.items()},
        "accounts": [account_view(venue, a) for a in venue.accounts],
        "faults": [f.view() for f in faults.queued],
        "held": len(faults.held),
        "limits": vars(venue.limits),
        "fees": {"maker": wire(venue.maker_rate), "taker": wire(venue.taker_rate)},
    }


def add_account(venue: Venue, _faults: Faults, body: dict[str, Any]) -> Any:
    owner, usdc = address(body, "address"), decimal(body, "usdc")
    if owner in venue.agents:
        raise Refused(422, "address: already an agent wallet; an account needs its own address")
    venue.add_account(owner, usdc)
    return account_view(venue, owner)


def add_agent(venue: Venue, _faults: Faults, body: dict[str, Any]) -> Any:
    owner, agent = address(body, "account"), address(body, "agent")
    if owner not in venue.accounts:
        raise Refused(404, f"account: {owner} is not an account; POST accounts first")
    if agent in venue.accounts or venue.agents.get(agent, owner) != owner:
        raise Refused(422, "agent: already used by another account (never reuse an agent)")
    name = body.get("name") or ""
    if not isinstance(name, str):
        raise Refused(422, "name: the agent's name, a string (or null for the unnamed agent)")
    venue.approve_agent(owner, agent, name)
    return {"account": owner, "agent": agent, "name": name}


def remove_agent(venue: Venue, _faults: Faults, body: dict[str, Any]) -> Any:
    """Deregister an agent (its nonces stay kept, so its old signatures never replay)."""
    agent = address(body, "agent")
    if agent not in venue.agents:
        raise Refused(404, f"agent: {agent} is not an approved agent")
    owner = venue.agents.pop(agent)
    venue.agent_names.pop(agent, None)
    venue.agent_valid_until.pop(agent, None)
    return {"account": owner, "agent": agent, "removed": True}


def set_mark(venue: Venue, _faults: Faults, body: dict[str, Any]) -> Any:
    name, px = coin(venue, body), decimal(body, "px", positive=True)
    return {"fills": matching.set_mark(venue, name, px)}


def set_liquidity(venue: Venue, _faults: Faults, body: dict[str, Any]) -> Any:
    name = coin(venue, body)
    venue.liquidity[name] = None if body.get("sz") is None else decimal(body, "sz", positive=True)
    return {"coin": name, "sz": body.get("sz")}


def set_fees(venue: Venue, _faults: Faults, body: dict[str, Any]) -> Any:
    maker = decimal(body, "maker") if "maker" in body else venue.maker_rate
    taker = decimal(body, "taker") if "taker" in body else venue.taker_rate
    venue.maker_rate, venue.taker_rate = maker, taker
    return {"maker": wire(maker), "taker": wire(taker)}


def set_limits(venue: Venue, _faults: Faults, body: dict[str, Any]) -> Any:
    for field in body:
        value = body[field]
        if field not in LIMIT_FIELDS:
            raise Refused(422, f"{field}: not a limit; one of {', '.join(LIMIT_FIELDS)}")
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise Refused(422, f"{field}: a positive integer")
    for field in body:
        setattr(venue.limits, field, body[field])
    return vars(venue.limits)


def add_fault(_venue: Venue, faults: Faults, body: dict[str, Any]) -> Any:
    try:
        fault = parse_fault(body)
    except ValueError as error:
        raise Refused(422, str(error)) from None
    faults.add(fault)
    return fault.view()


def clear_faults(_venue: Venue, faults: Faults, _body: dict[str, Any]) -> Any:
    faults.clear()
    return {"faults": []}


def release(_venue: Venue, faults: Faults, _body: dict[str, Any]) -> Any:
    return {"released": faults.release()}


def clock(venue: Venue, _faults: Faults, body: dict[str, Any]) -> Any:
    step = body.get("advance_ms")
    if not isinstance(step, int) or isinstance(step, bool):
        raise Refused(422, "advance_ms: an integer number of milliseconds")
    venue.clock_offset_ms += step
    return {"now_ms": venue.now_ms(), "fills": matching.tick(venue)}


def tick(venue: Venue, _faults: Faults, _body: dict[str, Any]) -> Any:
    return {"fills": matching.tick(venue)}


def requests_seen(venue: Venue, _faults: Faults, body: dict[str, Any]) -> Any:
    cloid = str(body.get("cloid", "")).lower()
    records = venue.requests.get(cloid, [])
    return {
        "received": len(records),
        "committed": sum(r.committed for r in records),
        "requests": [
            {"nonce": r.nonce, "committed": r.committed, "answer": r.answer} for r in records
        ],
    }


def orders(venue: Venue, _faults: Faults, body: dict[str, Any]) -> Any:
    user = address(body, "user")
    return [views.order_status(venue, o) for o in venue.user_orders(user)]


ROUTES = (
    ("GET", "/state", state),
    ("POST", "/accounts", add_account),
    ("POST", "/agents", add_agent),
    ("DELETE", "/agents/{agent}", remove_agent),
    ("POST", "/marks", set_mark),
    ("POST", "/liquidity", set_liquidity),
    ("POST", "/fees", set_fees),
    ("POST", "/limits", set_limits),
    ("POST", "/faults", add_fault),
    ("DELETE", "/faults", clear_faults),
    ("POST", "/release", release),
    ("POST", "/clock", clock),
    ("POST", "/tick", tick),
    ("GET", "/requests", requests_seen),
    ("GET", "/orders", orders),
)


def add_routes(app: web.Application, venue_key: Any, faults_key: Any) -> None:
    for method, path, handler in ROUTES:

        async def route(request: web.Request, handler: Any = handler) -> web.Response:
            if request.method == "GET":
                body: Any = dict(request.query)
            else:
                try:
                    body = json.loads(await request.read() or b"{}")
                except ValueError:
                    return web.json_response({"error": "body: not JSON"}, status=422)
            if not isinstance(body, dict):
                return web.json_response({"error": "body: a JSON object"}, status=422)
            body.update(request.match_info)  # a path's {agent} is a field like the body's
            try:
                return web.json_response(handler(app[venue_key], app[faults_key], body))
            except Refused as refused:
                return web.json_response({"error": str(refused)}, status=refused.status)

        app.router.add_route(method, PREFIX + path, route)
