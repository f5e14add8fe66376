"""Signatures: the SDK's own test vectors through the sandbox's verifier, wrong signers,
nonces and expiresAfter."""

from __future__ import annotations

import eth_account
from hyperliquid.utils.signing import (  # type: ignore[import-untyped]
    float_to_int_for_hashing,
    order_request_to_order_wire,
    order_wires_to_order_action,
)
from hyperliquid.utils.types import Cloid  # type: ignore[import-untyped]

from hlsandbox.exchange import Signed, recover_signer
from hlsandbox.testing import RunningSandbox
from tests.support.hl_sandbox import (
    HlWallets,
    exchange_for,
    order_action,
    sdk,
    signed_payload,
    throwaway_key,
)

# Vectors from hyperliquid-dex/hyperliquid-python-sdk tests/signing_test.py (MIT licence,
# Copyright (c) 2024 Hyperliquid Labs Pte. Ltd.): the testnet r/s/v of each case.
VECTOR_KEY = "0x0123456789012345678901234567890123456789012345678901234567890123"
VAULT = "0x1719884eb866cb12b2287399b15f7db5e7d775ea"
ORDER_GTC = {"coin": "ETH", "is_buy": True, "sz": 100, "limit_px": 100, "reduce_only": False,
             "order_type": {"limit": {"tif": "Gtc"}}, "cloid": None}  # fmt: skip
ORDER_CLOID = {**ORDER_GTC, "cloid": Cloid.from_str("0x00000000000000000000000000000001")}
DUMMY = {"type": "dummy", "num": float_to_int_for_hashing(1000)}
TESTNET_VECTORS = [
    (DUMMY, None, "0x542af61ef1f429707e3c76c5293c80d01f74ef853e34b76efffcb57e574f9510",
     "0x17b8b32f086e8cdede991f1e2c529f5dd5297cbe8128500e00cbaf766204a613", 28),
    (order_wires_to_order_action([order_request_to_order_wire(ORDER_GTC, 1)]), None,
     "0x82b2ba28e76b3d761093aaded1b1cdad4960b3af30212b343fb2e6cdfa4e3d54",
     "0x6b53878fc99d26047f4d7e8c90eb98955a109f44209163f52d8dc4278cbbd9f5", 27),
    (order_wires_to_order_action([order_request_to_order_wire(ORDER_CLOID, 1)]), None,
     "0xeba0664bed2676fc4e5a743bf89e5c7501aa6d870bdb9446e122c9466c5cd16d",
     "0x7f3e74825c9114bc59086f1eebea2928c190fdfbfde144827cb02b85bbe90988", 28),
    (DUMMY, VAULT, "0xe281d2fb5c6e25ca01601f878e4d69c965bb598b88fac58e475dd1f5e56c362b",
     "0x7ddad27e9a238d045c035bc606349d075d5c5cd00a6cd1da23ab5c39d4ef0f60", 27),
]  # fmt: skip
# the mainnet signature of the dummy action: source "a", which the sandbox never accepts
MAINNET_DUMMY = ("0x53749d5b30552aeb2fca34b530185976545bb22d0b3ce6f62e31be961a59298",
                 "0x755c40ba9bf05223521753995abb2f73ab3229be8ec921f350cb447e384d8ed8", 27)  # fmt: skip


def test_the_sdk_signing_vectors_recover_their_key() -> None:
    expected = eth_account.Account.from_key(VECTOR_KEY).address.lower()
    for action, vault, r, s, v in TESTNET_VECTORS:
        signed = Signed(action, 0, {"r": r, "s": s, "v": v}, vault, None)
        assert recover_signer(signed) == expected, action
    r, s, v = MAINNET_DUMMY
    assert recover_signer(Signed(DUMMY, 0, {"r": r, "s": s, "v": v}, None, None)) != expected


async def test_an_unknown_signer_does_not_exist(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    stranger = throwaway_key("stranger")
    exchange = await exchange_for(hl_sandbox, HlWallets(hl_wallets.account, stranger))
    answer = await sdk(exchange.order, "BTC", True, 0.001, 59000, {"limit": {"tif": "Gtc"}})
    assert answer == {
        "status": "err",
        "response": f"User or API Wallet {stranger.address.lower()} does not exist.",
    }


async def test_a_tampered_body_recovers_some_other_wallet(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange = await exchange_for(hl_sandbox, hl_wallets)
    nonce = hl_sandbox.venue.now_ms()
    payload = signed_payload(hl_wallets.agent, order_action(0, True, 0.001, 59000), nonce)
    payload["action"]["orders"][0]["p"] = "58000"  # changed after signing

    answer = await sdk(exchange.post, "/exchange", payload)

    assert answer["status"] == "err"
    assert answer["response"].startswith("User or API Wallet 0x")
    assert answer["response"].endswith(" does not exist.")
    assert hl_wallets.agent.address.lower() not in answer["response"]


async def test_nonce_rules(hl_sandbox: RunningSandbox, hl_wallets: HlWallets) -> None:
    exchange = await exchange_for(hl_sandbox, hl_wallets)
    await hl_sandbox.set_limits(nonce_window=3)
    now = hl_sandbox.venue.now_ms()
    day = 24 * 60 * 60 * 1000
    for nonce in (now - 2 * day - 1, now + day + 60_000):
        answer = await sdk(exchange.noop, nonce)
        assert answer["status"] == "err" and answer["response"].startswith("Invalid nonce")
    for nonce in (now + 10, now + 20, now + 30):
        assert (await sdk(exchange.noop, nonce))["status"] == "ok"
    assert (await sdk(exchange.noop, now + 20))["response"] == (
        f"Invalid nonce: duplicate nonce {now + 20}"
    )
    # three kept: one below the smallest of them is refused, one between is new
    assert (await sdk(exchange.noop, now + 5))["status"] == "err"
    assert (await sdk(exchange.noop, now + 15))["status"] == "ok"


async def test_an_expired_action_is_refused(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange = await exchange_for(hl_sandbox, hl_wallets)
    nonce = hl_sandbox.venue.now_ms()
    cloid = "0x" + "12" * 16
    payload = signed_payload(
        hl_wallets.agent, order_action(0, True, 0.001, 59000, cloid), nonce, expires_after=nonce
    )
    await hl_sandbox.advance(1000)

    answer = await sdk(exchange.post, "/exchange", payload)

    assert answer["status"] == "err" and answer["response"].startswith("Action expired")
    assert await hl_sandbox.committed(cloid) == 0


async def test_an_account_signs_for_itself_and_approves_an_agent(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    own = await exchange_for(hl_sandbox, HlWallets(hl_wallets.account, hl_wallets.account))
    answer, agent_key = await sdk(own.approve_agent)
    assert answer == {"status": "ok", "response": {"type": "default"}}
    agent = eth_account.Account.from_key(agent_key)
    via_new_agent = await exchange_for(hl_sandbox, HlWallets(hl_wallets.account, agent))
    assert (await sdk(via_new_agent.noop, hl_sandbox.venue.now_ms()))["status"] == "ok"


async def test_a_removed_agent_no_longer_exists(
    hl_sandbox: RunningSandbox, hl_wallets: HlWallets
) -> None:
    exchange = await exchange_for(hl_sandbox, hl_wallets)
    assert (await sdk(exchange.noop, hl_sandbox.venue.now_ms()))["status"] == "ok"

    await hl_sandbox.remove_agent(hl_wallets.agent.address)

    answer = await sdk(exchange.noop, hl_sandbox.venue.now_ms() + 1)
    assert answer["response"] == (
        f"User or API Wallet {hl_wallets.agent.address.lower()} does not exist."
    )
