"""What is already settled with a counterparty, checked before a message draft is filed.

A destination may name a baseline source: per counterparty, its contract status (with the
evidence) and dated facts. The gate (`gate`, pure) reads what the source said:
- a contract signed or delivered refuses the draft (422, the evidence and what to do):
  asking the counterparty again for what a signed contract settled is the failure this
  prevents; `force_despite_signed_contract` lets it through, stamped
  `[BASELINE_OVERRIDE_SIGNED_CONTRACT]` on the card;
- a source that cannot be read never blocks filing and never passes silently: the draft is
  filed stamped `[BASELINE_CHECK_UNAVAILABLE]`, and the card says the guard was off; so is
  a file with a status outside the closed set (`CONTRACT_STATUSES`), which `config check`
  and `run` refuse from the start;
- statuses and counterparty keys compare without case or surrounding whitespace
  ("Acme-Supplier " is acme-supplier);
- the freshest few facts ride along as `[BASELINE FACTS: ...]`.
The stamps are a term of the draft's projection, so the confirm digest binds them.

Sources: a JSON or TOML file (`FileBaseline`), read on every filing so an edit counts at
once. Another source (an HTTP service, a table) plugs in behind `BaselineSource`.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Protocol

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from kernel.problems import FieldProblem

# Contract statuses are a closed set: a near miss ("signed ", "Signed (v3)") must not read as
# "not settled" and let a draft through. Case and surrounding whitespace do not count; any
# other status makes the file invalid (`config check` refuses it; at filing the draft is
# stamped unchecked, as for any file that does not read).
CONTRACT_STATUSES = (
    "none",
    "draft",
    "negotiating",
    "signed",
    "delivered",
    "expired",
    "terminated",
    "cancelled",
)
SETTLED_CONTRACTS = frozenset({"signed", "delivered"})
OVERRIDE_STAMP = "[BASELINE_OVERRIDE_SIGNED_CONTRACT]"
UNAVAILABLE_STAMP = "[BASELINE_CHECK_UNAVAILABLE]"
FACTS_SHOWN = 3
# what a fact or the evidence may take on the card (a card holds at most 30 KB)
SHOWN_CHARS = 120
REFUSAL_CODE = "signed_contract_on_record"
BASELINE_TERM = "baseline"


def folded(word: str) -> str:
    """How a status or a counterparty key compares: case and surrounding whitespace aside."""
    return word.strip().casefold()


def _contract_status(value: object) -> object:
    if not isinstance(value, str):
        return value  # the str field says what is wrong
    status = folded(value)
    if status not in CONTRACT_STATUSES:
        raise ValueError(
            f"{value!r} is not a contract status; use one of {', '.join(CONTRACT_STATUSES)}"
        )
    return status


class Contract(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: Annotated[str, BeforeValidator(_contract_status)] = Field(
        description="one of CONTRACT_STATUSES"
    )
    evidence: str | None = Field(default=None, max_length=500)
    at: datetime | None = None


class Fact(BaseModel):
    model_config = ConfigDict(extra="forbid")

    at: datetime
    text: str = Field(min_length=1, max_length=500)


class CounterpartyBaseline(BaseModel):
    model_config = ConfigDict(extra="forbid")

    contract: Contract | None = None
    facts: list[Fact] = Field(default_factory=list)


class BaselineFile(BaseModel):
    """The file's shape: `{"counterparties": {"acme-supplier": {"contract": ..., "facts": [...]}}}`."""

    model_config = ConfigDict(extra="forbid")

    # keyed by the folded name (`folded`): "Acme-Supplier " is acme-supplier's entry
    counterparties: dict[str, CounterpartyBaseline] = Field(default_factory=dict)

    @field_validator("counterparties")
    @classmethod
    def _folded_keys(
        cls, value: dict[str, CounterpartyBaseline]
    ) -> dict[str, CounterpartyBaseline]:
        # after the entries, so a problem inside one names the key as written
        keys: dict[str, str] = {}
        for key in value:
            if not folded(key):
                raise ValueError(f"{key!r} is not a counterparty name")
            if (other := keys.setdefault(folded(key), key)) != key:
                raise ValueError(f"{other!r} and {key!r} name one counterparty; keep one")
        return {folded(key): entry for key, entry in value.items()}


class BaselineUnavailable(Exception):
    """The source could not be read; the message says why (never a secret)."""


class BaselineSource(Protocol):
    def read(self, counterparty: str) -> CounterpartyBaseline | None:
        """What is on record for `counterparty` (None: nothing); raises BaselineUnavailable."""
        ...


@dataclass(frozen=True)
class FileBaseline:
    path: Path

    def read(self, counterparty: str) -> CounterpartyBaseline | None:
        return load_baseline_file(self.path).counterparties.get(folded(counterparty))


def load_baseline_file(path: Path) -> BaselineFile:
    """The whole file, checked (JSON, or TOML by a .toml suffix); BaselineUnavailable if not."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise BaselineUnavailable(f"{path} cannot be read ({error.strerror or error})") from None
    try:
        data = tomllib.loads(raw.decode()) if path.suffix == ".toml" else json.loads(raw)
        return BaselineFile.model_validate(data)
    except ValidationError as error:  # the shape: where (the key) and what
        raise BaselineUnavailable(f"{path} is not a baseline file ({_first(error)})") from None
    except ValueError as error:  # JSON, TOML and UTF-8 errors
        first = str(error).splitlines()[0][:200]
        raise BaselineUnavailable(f"{path} is not a baseline file ({first})") from None


def _first(error: ValidationError) -> str:
    """The first problem, as `counterparties.acme.contract.status: why` (bounded)."""
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"])
    why = problem["msg"].removeprefix("Value error, ")
    return f"{where}: {why}"[:300]


@dataclass(frozen=True)
class BaselineReading:
    """What the source said about one counterparty at filing time."""

    counterparty: str
    baseline: CounterpartyBaseline | None = None
    unavailable: str | None = None  # why it could not be read: the guard was off


def read_baseline(source: BaselineSource, counterparty: str) -> BaselineReading:
    try:
        return BaselineReading(counterparty, source.read(counterparty))
    except BaselineUnavailable as error:
        return BaselineReading(counterparty, unavailable=str(error))


@dataclass(frozen=True)
class Gate:
    problems: list[FieldProblem]
    stamp: str | None  # the projection's `baseline` term, if there is anything to say


def _short(words: str) -> str:
    words = " ".join(words.split())
    return words if len(words) <= SHOWN_CHARS else words[: SHOWN_CHARS - 1] + "…"


def _contract_words(contract: Contract) -> str:
    when = f" on {contract.at.date().isoformat()}" if contract.at else ""
    evidence = f": {_short(contract.evidence)}" if contract.evidence else ""
    return f"contract {contract.status}{when}{evidence}"


def facts_stamp(facts: list[Fact]) -> str | None:
    freshest = sorted(facts, key=lambda fact: fact.at, reverse=True)[:FACTS_SHOWN]
    if not freshest:
        return None
    listed = "; ".join(f"{fact.at.date().isoformat()} {_short(fact.text)}" for fact in freshest)
    return f"[BASELINE FACTS: {listed}]"


def gate(reading: BaselineReading | None, forced: bool) -> Gate:
    """The baseline's say on a draft (None: its destination has no baseline source)."""
    if reading is None:
        return Gate([], None)
    if reading.unavailable is not None:
        return Gate(
            [],
            f"{UNAVAILABLE_STAMP} the baseline could not be checked ({reading.unavailable}); "
            "the signed-contract guard was off for this draft",
        )
    baseline = reading.baseline or CounterpartyBaseline()
    lines = []
    contract = baseline.contract
    if contract is not None and contract.status in SETTLED_CONTRACTS:
        if not forced:
            return Gate(
                [
                    FieldProblem(
                        "payload.counterparty",
                        f"{reading.counterparty} has a {_contract_words(contract)}",
                        "do not ask the counterparty again for what the contract settled; "
                        "if this message must go anyway, set "
                        "payload.force_despite_signed_contract to true (the card will say so)",
                    )
                ],
                None,
            )
        lines.append(f"{OVERRIDE_STAMP} filed despite the {_contract_words(contract)}")
    if (facts := facts_stamp(baseline.facts)) is not None:
        lines.append(facts)
    return Gate([], "\n".join(lines) or None)
