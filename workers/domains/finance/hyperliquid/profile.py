"""What the Hyperliquid adapter declares (`PROFILE`) and which world each network is.

The words are read by people (`countersign venue profile`, docs/venues.md); the sets are what
the capability check reads. Everything here is stated plainly, including what is not done.
"""

from __future__ import annotations

from typing import Final

from store import World
from workers.domains.finance.settings import Network
from workers.domains.finance.venues.contract import Profile

VENUE_NAME: Final = "hyperliquid"
EXECUTOR_REVISION: Final = "1"
ACCOUNT_MODE: Final = "one_way"  # a Hyperliquid perp account holds one net position per coin
MARGIN_MODE: Final = "cross"
WORLDS: Final[dict[Network, World]] = {
    "emulator": World.EMULATOR,
    "testnet": World.TESTNET,
    "mainnet": World.LIVE,
}

PROFILE: Final = Profile(
    name=VENUE_NAME,
    executor_revision=EXECUTOR_REVISION,
    products=frozenset({"perp"}),
    order_types=frozenset({"limit", "market"}),
    time_in_force=frozenset({"GTC", "IOC", "POST_ONLY"}),
    protective=True,
    reduce_only=True,
    account_modes=frozenset({ACCOUNT_MODE}),
    precision="prices: at most 5 significant figures and at most 6 - szDecimals decimals "
    "(whole numbers always allowed); sizes: at most szDecimals decimals; read fresh from meta",
    minimum="$10 notional per order (quantity x price)",
    fees="from each fill's fee and feeToken; a fill without a fee is unknown, never zero",
    authentication="an agent (API) wallet key, read from the environment variable each "
    "account names; it signs only, reads use the account's address",
    client_ids="cloid = 0x + the first 16 bytes of sha256(client id); protective children "
    "have their own (cs-<id>:sl, cs-<id>:tp)",
    reconciliation="orderStatus by cloid; if unknown, a noop signed with the request's own "
    "nonce fences it (it can then never land); bounded by expiresAfter; never a second order",
    notes=(
        "perpetuals only: no spot",
        "market orders go out as IOC limits at the confirmed slippage bound",
        "no FOK time in force (Hyperliquid has none)",
        "no vaults and no subaccount routing (vaultAddress is never set)",
        "no HIP-3 (builder-deployed) markets: they drop cloids",
        "never changes leverage, margin mode, transfers or withdrawals as a side effect",
    ),
    market_as_bounded_limit=True,
)
