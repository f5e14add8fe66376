"""Configuration of the finance domain ([domains.finance]) and of its venues.

An account names its venue; a venue other than the simulated one is opened only when its
table is configured ([domains.finance.hyperliquid]), and an account on a venue that is not
configured is a config error, never a fallback to another venue.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from workers.domains.finance.sim.faults import Faults
from workers.domains.types import Name, PositiveDecimal

Network = Literal["emulator", "testnet", "mainnet"]
# The official endpoints (hyperliquid.utils.constants); the SDK signs for mainnet only when
# its base URL is exactly MAINNET_URL, so these strings are compared, never normalised.
MAINNET_URL = "https://api.hyperliquid.xyz"
TESTNET_URL = "https://api.hyperliquid-testnet.xyz"
EMULATOR_URL = "http://127.0.0.1:3001"
ADDRESS = r"^0x[0-9a-fA-F]{40}$"
ENV_NAME = r"^[A-Z_][A-Z0-9_]{0,127}$"


class FinanceAccount(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Name = Field(description="account name proposals refer to")
    venue: Name = Field(default="sim", description="venue the account lives on")
    budget: PositiveDecimal = Field(description="exposure budget, decimal string")
    currency: str = Field(default="USDC", pattern=r"^[A-Z0-9]{2,12}$")
    # a Hyperliquid account: its master account address, which every read names (orders are
    # never routed to a subaccount or vault), and the environment variable holding the
    # private key of the agent wallet that signs for it (the key itself never appears in
    # config, logs, the API or a card)
    address: str | None = Field(default=None, pattern=ADDRESS)
    agent_key_env: str | None = Field(default=None, pattern=ENV_NAME)


class HyperliquidSettings(BaseModel):
    """[domains.finance.hyperliquid]: where orders go and how ambiguity is bounded."""

    model_config = ConfigDict(extra="forbid")

    # emulator: a local copy of the API (`countersign hl-sandbox`); testnet; mainnet (real
    # money, only with allow_mainnet = true)
    network: Network = "emulator"
    # the API base URL; left out: the network's own (EMULATOR_URL for the emulator). A
    # testnet or mainnet network takes only its official URL.
    url: str | None = Field(default=None, pattern=r"^https?://[^\s/]+(:\d+)?$")
    allow_mainnet: bool = False  # the one switch that lets an order reach real money
    # a request not taken by the venue within this many seconds can never land
    # (`expiresAfter`); also how long an ambiguous submit can stay ambiguous
    expires_after_s: int = Field(default=30, ge=5, le=300)
    request_timeout_s: float = Field(default=10.0, gt=0, le=60)
    poll_s: float = Field(default=2.0, gt=0, le=60)  # how often working orders are read
    # the request weight per minute this process allows itself: Hyperliquid's per-IP limit
    # is 1200; raise it only against an emulator whose own limit is raised
    ip_weight_per_min: int = Field(default=1200, ge=1)

    def base_url(self) -> str:
        if self.url is not None:
            return self.url
        return {"emulator": EMULATOR_URL, "testnet": TESTNET_URL, "mainnet": MAINNET_URL}[
            self.network
        ]

    @model_validator(mode="after")
    def _network_and_url_agree(self) -> HyperliquidSettings:
        official = {"testnet": TESTNET_URL, "mainnet": MAINNET_URL}
        if self.network in official and self.url not in (None, official[self.network]):
            raise _refused(
                f"network {self.network!r} takes only its official URL {official[self.network]}",
                'remove url, or set network = "emulator" for a local one',
            )
        if self.network == "emulator" and self.url in (MAINNET_URL, TESTNET_URL):
            raise _refused(
                f"url {self.url} is a real Hyperliquid network, not an emulator",
                'set network to "testnet" or "mainnet" (mainnet also needs allow_mainnet = true)',
            )
        if self.network == "mainnet" and not self.allow_mainnet:
            raise _refused(
                'network "mainnet" trades real money and is off by default',
                "set allow_mainnet = true to switch live trading on",
            )
        return self


def _refused(reason: str, fix: str) -> PydanticCustomError:
    """A config error that carries its own fix (bot.config.validation reads ctx["fix"])."""
    return PydanticCustomError("hyperliquid_network", "{reason}", {"reason": reason, "fix": fix})


class FinanceSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    accounts: list[FinanceAccount] = Field(default_factory=list)
    # the simulated venue's own durable state (a separate SQLite file)
    venue_path: str = "var/sim-venue.db"
    # faults for the simulated venue; COUNTERSIGN_SIM_FAULTS overrides (see Faults.parse)
    sim_faults: str = ""
    hyperliquid: HyperliquidSettings | None = None

    @field_validator("sim_faults")
    @classmethod
    def _faults_parse(cls, value: str) -> str:
        Faults.parse(value)  # FaultsError (a ValueError) names the bad item
        return value

    def account(self, name: str) -> FinanceAccount | None:
        return next((a for a in self.accounts if a.name == name), None)
