"""`POST /exchange` committed: signature, signer -> account, expiry, address budget, nonce, action.

The signature is checked with the SDK's own verifier (`recover_agent_or_user_from_l1_action`,
testnet source "b": the SDK signs for testnet whenever its URL is not mainnet's), so the
sandbox writes no crypto of its own. A wrong signature recovers some other address and is
answered as Hyperliquid does: that wallet "does not exist".
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from hyperliquid.utils.signing import (  # type: ignore[import-untyped]
    recover_agent_or_user_from_l1_action,
    recover_user_from_user_signed_action,
)

from hlsandbox import matching, orders
from hlsandbox.numbers import WireError
from hlsandbox.state import Account, Venue

DAY_MS = 24 * 60 * 60 * 1000
SCHEDULE_CANCEL_LEAD_MS = 5000
SCHEDULE_CANCEL_TRIGGERS_PER_DAY = 10
CANCEL_TYPES = ("cancel", "cancelByCloid")
APPROVE_AGENT_TYPES = [
    {"name": "hyperliquidChain", "type": "string"},
    {"name": "agentAddress", "type": "address"},
    {"name": "agentName", "type": "string"},
    {"name": "nonce", "type": "uint64"},
]
DEFAULT_OK = {"status": "ok", "response": {"type": "default"}}


@dataclass
class Outcome:
    http_status: int
    body: Any  # JSON; None is answered as the literal `null`
    committed: bool = False


def err(text: str) -> Outcome:
    return Outcome(200, {"status": "err", "response": text})


RATE_LIMITED = Outcome(429, None)


@dataclass(frozen=True)
class Signed:
    action: dict[str, Any]
    nonce: int
    signature: dict[str, Any]
    vault_address: str | None
    expires_after: int | None


def parse_signed(payload: Any) -> Signed:
    if not isinstance(payload, dict):
        raise WireError("body: expected an object")
    action, nonce, signature = payload.get("action"), payload.get("nonce"), payload.get("signature")
    vault, expires = payload.get("vaultAddress"), payload.get("expiresAfter")
    if not isinstance(action, dict) or not isinstance(action.get("type"), str):
        raise WireError("action: expected an object with a type")
    if not isinstance(nonce, int) or isinstance(nonce, bool) or nonce < 0:
        raise WireError("nonce: expected a non-negative integer")
    if not isinstance(signature, dict) or not {"r", "s", "v"} <= signature.keys():
        raise WireError("signature: expected {r, s, v}")
    if vault is not None and not isinstance(vault, str):
        raise WireError("vaultAddress: expected an address or null")
    if expires is not None and (not isinstance(expires, int) or isinstance(expires, bool)):
        raise WireError("expiresAfter: expected an integer or null")
    return Signed(action, nonce, signature, vault, expires)


def recover_signer(signed: Signed) -> str:
    try:
        if signed.action["type"] == "approveAgent":
            action = copy.deepcopy(signed.action)
            action.setdefault("agentName", "")  # the SDK drops an empty name after signing
            address = recover_user_from_user_signed_action(
                action,
                signed.signature,
                APPROVE_AGENT_TYPES,
                "HyperliquidTransaction:ApproveAgent",
                False,
            )
        else:
            address = recover_agent_or_user_from_l1_action(
                signed.action,
                signed.signature,
                signed.vault_address,
                signed.nonce,
                signed.expires_after,
                False,
            )
    except Exception as error:  # any unrecoverable signature is malformed input
        raise WireError(f"signature: cannot be recovered ({type(error).__name__})") from None
    return str(address).lower()


def use_nonce(venue: Venue, signer: str, nonce: int) -> str | None:
    """Keep the highest N nonces per signer; the refusal text, or None when the nonce is new."""
    kept = venue.nonces.setdefault(signer, [])
    if nonce in kept:
        return f"Invalid nonce: duplicate nonce {nonce}"
    if len(kept) >= venue.limits.nonce_window and nonce < kept[0]:
        return f"Invalid nonce: nonce {nonce} is lower than the lowest kept nonce {kept[0]}"
    now = venue.now_ms()
    if not now - 2 * DAY_MS < nonce < now + DAY_MS:
        return f"Invalid nonce: nonce {nonce} is outside the allowed window around {now}"
    kept.append(nonce)
    kept.sort()
    del kept[: max(0, len(kept) - venue.limits.nonce_window)]
    return None


def within_budget(venue: Venue, account: Account, action: dict[str, Any]) -> bool:
    """The per-address action budget: 10000 + 1 per USDC traded; cancels get more."""
    cap = venue.limits.address_actions + int(account.volume)
    items = action.get("orders", action.get("cancels"))
    count = len(items) if isinstance(items, list) and items else 1
    if action["type"] in CANCEL_TYPES:
        if account.cancels_used + count > min(cap + 100000, cap * 2):
            return False
        account.cancels_used += count
        return True
    if account.actions_used + count > cap:
        return False
    account.actions_used += count
    return True


def process(venue: Venue, payload: Any, *, drop_fee: bool = False) -> Outcome:
    """One delivery of a signed /exchange body, committed or refused."""
    try:
        signed = parse_signed(payload)
        signer = recover_signer(signed)
    except WireError:
        return Outcome(422, "Failed to deserialize the JSON body into the target type")
    if signed.action["type"] == "approveAgent":
        return approve_agent(venue, signed, signer)
    account = venue.account_of_signer(signer)
    if account is None:
        return err(f"User or API Wallet {signer} does not exist.")
    if signed.vault_address is not None:
        return err(f"Vault {signed.vault_address.lower()} does not exist.")
    if signed.expires_after is not None and signed.expires_after < venue.now_ms():
        return err(f"Action expired: expiresAfter {signed.expires_after} has passed.")
    if not within_budget(venue, account, signed.action):
        return RATE_LIMITED
    refused = use_nonce(venue, signer, signed.nonce)
    if refused is not None:
        return err(refused)
    try:
        return apply(venue, account, signed, drop_fee)
    except orders.PayloadError as error:
        return err(str(error))  # refused whole: nothing of it landed
    except WireError:
        return Outcome(422, "Failed to deserialize the JSON body into the target type")


def apply(venue: Venue, account: Account, signed: Signed, drop_fee: bool) -> Outcome:
    action, kind = signed.action, signed.action["type"]
    if kind == "order":
        tx_hash = venue.tx_hash(account.address, signed.nonce)
        statuses = orders.place(venue, account, action, tx_hash, drop_fee)
        body = {"status": "ok", "response": {"type": "order", "data": {"statuses": statuses}}}
        return Outcome(200, body, committed=True)
    if kind in CANCEL_TYPES:
        cancels = action.get("cancels")
        if not isinstance(cancels, list):
            raise WireError("action.cancels: expected a list")
        results = [cancel_one(venue, account, kind, raw) for raw in cancels]
        body = {"status": "ok", "response": {"type": "cancel", "data": {"statuses": results}}}
        return Outcome(200, body, committed=True)
    if kind == "noop":
        return Outcome(200, DEFAULT_OK, committed=True)
    if kind == "scheduleCancel":
        return schedule_cancel(venue, account, action.get("time"))
    if kind == "updateLeverage":
        return update_leverage(venue, account, action)
    return err(f"Action type {kind!r} is not supported by the sandbox.")


def cancel_one(venue: Venue, account: Account, kind: str, raw: Any) -> Any:
    if not isinstance(raw, dict):
        raise WireError("cancels: expected objects")
    if kind == "cancel":
        asset, oid = raw.get("a"), raw.get("o")
        if not isinstance(asset, int) or not isinstance(oid, int):
            raise WireError("cancels: {a: asset, o: oid}")
        return matching.cancel(venue, account, venue.orders.get(oid), asset)
    asset, cloid = raw.get("asset"), raw.get("cloid")
    if not isinstance(asset, int) or not isinstance(cloid, str):
        raise WireError("cancels: {asset, cloid}")
    return matching.cancel(venue, account, venue.order_by_cloid(account.address, cloid), asset)


def schedule_cancel(venue: Venue, account: Account, when: Any) -> Outcome:
    if when is None:
        account.scheduled_cancel = None
        return Outcome(200, DEFAULT_OK, committed=True)
    if not isinstance(when, int) or when < venue.now_ms() + SCHEDULE_CANCEL_LEAD_MS:
        return err("Scheduled cancel time too early, must be at least 5 seconds from now.")
    if account.scheduled_cancel_triggers >= SCHEDULE_CANCEL_TRIGGERS_PER_DAY:
        return err("Too many scheduled cancel triggers today.")
    account.scheduled_cancel = when
    return Outcome(200, DEFAULT_OK, committed=True)


def update_leverage(venue: Venue, account: Account, action: dict[str, Any]) -> Outcome:
    asset = venue.by_index.get(action.get("asset"))  # type: ignore[arg-type]
    leverage, is_cross = action.get("leverage"), action.get("isCross")
    if asset is None:
        return err(f"Asset {action.get('asset')} does not exist.")
    if not isinstance(leverage, int) or not 1 <= leverage <= asset.max_leverage:
        return err(f"Invalid leverage value: 1 to {asset.max_leverage} for {asset.name}.")
    account.leverage[asset.name] = (leverage, bool(is_cross))
    return Outcome(200, DEFAULT_OK, committed=True)


def approve_agent(venue: Venue, signed: Signed, signer: str) -> Outcome:
    """The user-signed approveAgent: the account itself (never an agent) names a new agent."""
    account = venue.accounts.get(signer)
    if account is None:
        return err(f"Must deposit before performing actions. User: {signer}")
    agent = signed.action.get("agentAddress")
    if not isinstance(agent, str) or len(agent) != 42:
        return Outcome(422, "Failed to deserialize the JSON body into the target type")
    refused = use_nonce(venue, signer, signed.nonce)
    if refused is not None:
        return err(refused)
    if agent.lower() in venue.agents or agent.lower() in venue.accounts:
        return err("Extra agent already used.")
    name = signed.action.get("agentName")
    venue.approve_agent(account.address, agent, name if isinstance(name, str) else "")
    return Outcome(200, DEFAULT_OK, committed=True)
