"""Configuration of the finance domain ([domains.finance])."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from workers.domains.types import Name, PositiveDecimal


class FinanceAccount(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Name = Field(description="account name proposals refer to")
    venue: Name = Field(default="sim", description="venue the account lives on")
    budget: PositiveDecimal = Field(description="exposure budget, decimal string")
    currency: str = Field(default="USDC", pattern=r"^[A-Z0-9]{2,12}$")


class FinanceSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    accounts: list[FinanceAccount] = Field(default_factory=list)
    # the simulated venue's own durable state (a separate SQLite file)
    venue_path: str = "var/sim-venue.db"
    # faults for the simulated venue; COUNTERSIGN_SIM_FAULTS overrides (see Faults.parse)
    sim_faults: str = ""

    @field_validator("sim_faults")
    @classmethod
    def _faults_parse(cls, value: str) -> str:
        from workers.domains.finance.sim.faults import Faults

        Faults.parse(value)  # FaultsError (a ValueError) names the bad item
        return value

    def account(self, name: str) -> FinanceAccount | None:
        return next((a for a in self.accounts if a.name == name), None)
