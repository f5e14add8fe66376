"""Signing Hyperliquid L1 actions with an agent wallet, and the nonces they carry.

The SDK's `Exchange.order()` picks its nonce inside and never returns it, so this adapter
signs with the SDK's own `sign_l1_action` and keeps the nonce: it is recorded with the signed
action before the POST, and a `noop` signed with the same nonce later fences the request
(it can then never land). `is_mainnet` is decided exactly as the SDK decides it: the base
URL equals the SDK's MAINNET_API_URL. The agent key is held in `AgentKey`, whose repr and
str never show it; only its address appears anywhere.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import eth_account
from eth_account.signers.local import LocalAccount
from hyperliquid.utils.constants import MAINNET_API_URL  # type: ignore[import-untyped]
from hyperliquid.utils.signing import sign_l1_action  # type: ignore[import-untyped]


class AgentKey:
    """An agent wallet's private key: it signs, and shows only its address."""

    __slots__ = ("_wallet",)

    def __init__(self, private_key: str) -> None:
        try:
            self._wallet: LocalAccount = eth_account.Account.from_key(private_key.strip())
        except Exception:  # the library's message could echo the key: never pass it on
            raise ValueError(
                "the agent key is not a valid private key (expected 0x followed by 64 hex digits)"
            ) from None

    @property
    def address(self) -> str:
        return str(self._wallet.address)

    def sign(
        self, action: dict[str, Any], nonce: int, expires_after: int | None, is_mainnet: bool
    ) -> dict[str, Any]:
        signature: dict[str, Any] = sign_l1_action(
            self._wallet, action, None, nonce, expires_after, is_mainnet
        )
        return signature

    def __repr__(self) -> str:
        return f"AgentKey(address={self.address}, key=<redacted>)"

    __str__ = __repr__

    def __reduce__(self) -> Any:  # never pickled (a pickle would carry the key)
        raise TypeError("an agent key cannot be pickled")


def is_mainnet(base_url: str) -> bool:
    """As the SDK decides (`self.base_url == MAINNET_API_URL`): the exact string."""
    return bool(base_url == MAINNET_API_URL)


class NonceAllocator:
    """Nonces for each signer in this process: milliseconds, strictly increasing
    (max(now_ms, last + 1)), so two actions in one millisecond never collide."""

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self._now_ms = now_ms
        self._last: dict[str, int] = {}
        self._lock = threading.Lock()

    def next(self, signer: str) -> int:
        with self._lock:
            nonce = max(self._now_ms(), self._last.get(signer.lower(), 0) + 1)
            self._last[signer.lower()] = nonce
            return nonce


@dataclass(frozen=True)
class Signed:
    """One signed action as it is posted, and as evidence records it."""

    action: dict[str, Any]
    nonce: int
    expires_after: int | None
    signature: dict[str, Any]
    signer: str

    def payload(self) -> dict[str, Any]:
        """The /exchange body, as the SDK's `_post_action` writes it (no vault)."""
        return {
            "action": self.action,
            "nonce": self.nonce,
            "signature": self.signature,
            "vaultAddress": None,
            "expiresAfter": self.expires_after,
        }


def sign(
    key: AgentKey, action: dict[str, Any], nonce: int, expires_after: int | None, base_url: str
) -> Signed:
    signature = key.sign(action, nonce, expires_after, is_mainnet(base_url))
    return Signed(action, nonce, expires_after, signature, key.address)
