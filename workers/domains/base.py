"""The contract every operation domain plugs in through: `Domain[Payload, Settings]`.

A domain is one package that owns everything about its kind of operation: the payload it
accepts (by schema version) and the terms a person sees, its settings (one config table,
`[domains.<config_table>]`), the runner that does its I/O after the claim (built by the
domain from its settings), what it reads before filing, its words (the card's title and
headline, a label per term, and per outcome status: words, tone and finality), whether it
moves an amount, and examples. The core never names a kind: it reads all of this from the
registry (`workers.domains`).

Words travel with the data, so `cards` stays below `workers` and a card redrawn a year later
says what the operator saw: the projection carries the kind's words and each term's label
(`workers.domains.checked`), and each outcome row carries its status's words, tone and finality
(`workers.executor`). The words' types are `workers.domains.words`; the runner's contract,
which this one names, is `workers.domains.execution`.

A domain author writes the typed hooks of `Domain[P, S]`; the core holds its `Checked` handle
(`workers.domains.checked`), the same hooks over `BaseModel`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, localcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel

from kernel.problems import FieldProblem
from store import World
from workers.domains.execution import Background, Runner
from workers.domains.words import KindWords, Meaning

if TYPE_CHECKING:
    from store import Signal

P = TypeVar("P", bound=BaseModel)
S = TypeVar("S", bound=BaseModel)
STORED = {"stored": True}  # the validation context of a payload read back from the store
# The terms a person sees, as JSON: {"title", "terms": [{"name", "value", "label"}], ...}.
Projection = dict[str, Any]


@dataclass(frozen=True)
class Example:
    """A payload that files as shown against the example config (docs, MCP, demo)."""

    name: str
    summary: str
    payload: Mapping[str, object]


@dataclass(frozen=True)
class Amount:
    """An operation's worst-case notional, as its domain computes it at proposal time.
    `value` None: it has an amount that could not be computed (approval rules by amount then
    apply, failing closed)."""

    value: Decimal | None
    currency: str

    def text(self) -> str:
        if self.value is None:
            return f"unknown {self.currency}"
        with localcontext() as wide:  # never InvalidOperation for lack of digits
            wide.prec = max(28, self.value.adjusted() + 4)
            return f"{self.value.quantize(Decimal('0.01')):f} {self.currency}"


@dataclass(frozen=True)
class Notice:
    """One line for an internal chat (a draft's filing receipt): where and what."""

    chat_id: str
    text: str


@dataclass(frozen=True)
class SecretEnv:
    """An environment variable a domain's settings name that holds a secret (an agent
    wallet's private key): `config check` and `run` refuse to start while it is unset, and
    its value is scrubbed from every log line like the bot's own secrets."""

    field: str  # where the domain's table names it: "accounts[1].agent_key_env"
    name: str  # the variable
    fix: str  # how to set it, never with the value: "export NAME=<the agent wallet's key>"


class ReadingUnavailable(Exception):
    """A domain's read of the outside world for a proposal (a venue observation) failed: the
    proposal cannot be checked now and may be retried; nothing about its terms is known."""


class LarkMessages(Protocol):
    """Lark message create, reply and read, retried (errors may carry `kind`; "terminal"
    means Lark refused it)."""

    async def send_text(self, receive_id: str, text: str, uuid: str) -> str: ...

    async def reply_text(self, message_id: str, text: str, uuid: str) -> str: ...

    async def get_message(self, message_id: str) -> dict[str, Any]: ...


@dataclass(frozen=True)
class RunnerContext:
    """What the workforce hands a domain's runner factory."""

    clock: Callable[[], datetime]
    environ: Mapping[str, str]
    # operation id -> its claim's id (the decision), as a receipt or a signed call names it
    decision_of: Callable[[str], Awaitable[str | None]]
    # called after an attempt's dispatch is committed (the crash-test hook)
    on_dispatched: Callable[[str], None]
    # these operations changed outside countersign (a venue's matching): look at them now
    wake: Callable[[Sequence[str]], Awaitable[None]]
    people: Mapping[str, str] = field(default_factory=dict)
    lark: LarkMessages | None = None  # None: no Lark in this process (a runner may need it)
    # the result-webhook rule for private addresses ([deliveries] allow_internal_targets)
    allow_internal_targets: bool = False
    tick_s: float = 1.0  # how often a runner's own clock runs ([execution] venue_tick_s)
    # durable evidence of an attempt (a signed request and its nonce), written before the
    # request leaves and read back by whichever replica reconciles it (attempts.evidence)
    record_evidence: Callable[[str, Mapping[str, Any]], Awaitable[None]] | None = None
    evidence_of: Callable[[str], Awaitable[Mapping[str, Any] | None]] | None = None


@dataclass(frozen=True)
class DemoDecision:
    """One click of `demo --script` on a sample's card: who presses which button, and the
    reason typed into the card's form for a reject."""

    operator: str
    action: Literal["confirm", "reject"] = "confirm"
    reason: str | None = None


ALICE_CONFIRMS = (DemoDecision("ou_alice"),)


@dataclass(frozen=True)
class DemoSetup:
    """How `countersign demo` shows this domain: the config table it runs with, what it
    starts beside the bot (a loopback service to call), and what the demo script files."""

    table: Mapping[str, object]
    background: Sequence[Background] = ()
    proposals: Sequence[Example] = ()
    # variables the table names (a demo service's signing secret), set for the demo's processes
    environ: Mapping[str, str] = field(default_factory=dict)
    # per proposal name: the card phrases `demo --script` waits for after Confirm, in order
    expect: Mapping[str, Sequence[str]] = field(default_factory=dict)
    outside_posts: int = 0  # messages they post in the counterparty chat (the script counts)
    # per proposal name: the clicks that decide it (default: Alice confirms)
    decisions: Mapping[str, Sequence[DemoDecision]] = field(default_factory=dict)
    # [[approval_rules]] the samples need (a quorum of three for a large order)
    approval_rules: Sequence[Mapping[str, object]] = ()


class FilingReads(Protocol):
    """What a domain may read from the store before filing (the API hands it in)."""

    async def signal(self, message_id: str) -> Signal | None: ...


class Domain(ABC, Generic[P, S]):
    """One kind of operation. Set the attributes; override the hooks the kind needs."""

    kind: str
    config_table: str  # [domains.<config_table>]
    settings_model: type[S]
    payload_models: Mapping[int, type[P]]  # schema version -> payload model
    executor_name: str
    executor_revision: str
    simulated: bool
    words: KindWords
    outcomes: Mapping[str, Meaning]  # every status its runner may report
    examples: Sequence[Example] = ()
    # payload fields that may carry free text (sanitized, not refused, for control characters)
    free_text_fields: frozenset[str] = frozenset()
    # a new proposal for the same target replaces the open (unclaimed) one: message drafts
    supersedes_open_drafts: bool = False
    # proposals are admitted only against the runner's capabilities, read by the caller
    needs_capabilities: bool = False
    # approval rules by amount may name this kind (notional() then says how much)
    moves_amount: bool = False

    def world(self, payload: P, settings: S) -> World | None:
        """The world this operation acts in, bound into its digest and marked on every
        surface (None: not a venue, its effect is what it says). Default: SIMULATED for a
        simulated kind, None otherwise."""
        return World.SIMULATED if self.simulated else None

    def worlds(self, settings: S) -> Sequence[World]:
        """Every world this kind may act in with these settings, for `countersign kinds`
        and the MCP kind list (a venue kind: the networks its configured venues are on).
        Default: the one `world` gives every payload of a simulated kind, else none."""
        return [World.SIMULATED] if self.simulated else []

    def executor(self, payload: P, settings: S) -> tuple[str, str]:
        """(name, revision) of the executor this payload runs on, bound into its digest; the
        runner must say it runs it (`Runner.runs`). Default: the kind's one executor."""
        return self.executor_name, self.executor_revision

    def schema(self, version: int) -> type[P] | None:
        return self.payload_models.get(version)

    def enabled(self, settings: S) -> bool:
        """Whether this kind takes proposals here (its table's `enabled`, if it has one)."""
        return getattr(settings, "enabled", True) is not False

    def payload_schema(self, settings: S) -> dict[str, Any]:
        """The JSON schema of the newest payload as agents see it (MCP, docs)."""
        return self.payload_models[max(self.payload_models)].model_json_schema()

    @abstractmethod
    def project(self, payload: P) -> Projection:
        """The terms an operator sees, in display order; bound into the confirm digest."""

    @abstractmethod
    def target_ref(self, payload: P) -> str:
        """The account or destination this operation acts on (bound into the digest)."""

    @abstractmethod
    async def open_runner(self, settings: S, context: RunnerContext) -> Runner | None:
        """The runner for this process (None: it cannot run here, e.g. it needs Lark)."""

    def admit(self, payload: P, settings: S) -> list[FieldProblem]:
        """Problems with this payload against the configured accounts/destinations."""
        return []

    def capability_problems(self, payload: P, capabilities: object) -> list[FieldProblem]:
        """Problems with this payload against what the runner could ever execute (pure)."""
        return []

    def notional(self, payload: P, settings: S, capabilities: object) -> Amount | None:
        """The worst-case amount at stake, for approval rules by amount (pure; None: this
        kind moves no amount)."""
        return None

    def preconditions(self, payload: P, settings: S, reading: object) -> Projection:
        """What `reading` (read_for_filing's) says: additions to the projection (`terms`
        appended, other keys set), or ProblemsFound with the domain's own code (pure)."""
        return {}

    async def read_for_filing(
        self, payload: Mapping[str, object], settings: S, reads: FilingReads
    ) -> object:
        """What the proposal's preconditions need from outside, read before filing (I/O)."""
        return None

    def audiences(self, payload: P, settings: S) -> Sequence[str] | None:
        """The audiences this payload may be addressed to (None: any the proposer may)."""
        return None

    def expires_in_s(self, payload: P, settings: S) -> int | None:
        """The expiry this payload gets when the request names none (None: [operations]
        default); still bounded by [operations] max_expires_in_s."""
        return None

    def auto_send_after_s(self, payload: P) -> int | None:
        """Seconds after filing when the draft sends itself if nobody decided (None: it
        waits for a person, the default of every kind)."""
        return None

    def auto_send_limits(self, settings: S) -> dict[str, int]:
        """Target ref -> the longest time box it allows now (re-checked at the clock's claim)."""
        return {}

    def filing_receipt(self, payload: P, settings: S) -> Notice | None:
        """The line an internal chat gets when this proposal is filed (None: nobody is told
        but the card's audience)."""
        return None

    def config_problems(self, settings: S) -> list[FieldProblem]:
        """Problems of this domain's own config table (fields relative to it)."""
        return []

    def secret_envs(self, settings: S) -> Sequence[SecretEnv]:
        """The secrets its settings name, by environment variable (none by default)."""
        return ()

    def policy(self, settings: S) -> dict[str, Any]:
        """What of this kind's settings decides what may be done (limits, switches, where it
        acts), for the effective policy's history (bot/config/policy_document.py). Default:
        all of them, so a change of any is a change of policy."""
        return settings.model_dump(mode="json")

    def outside_chats(self, settings: S) -> Mapping[str, str]:
        """Chats outsiders read (chat id -> who): countersign never replies there."""
        return {}

    def internal_chats(self, settings: S) -> list[tuple[str, str, str]]:
        """(field, chat id, what for) of every internal chat this config names."""
        return []

    def demo(self, chats: Mapping[str, str], workdir: Path) -> DemoSetup | None:
        """The demo's setup (`chats`: the demo's chat ids by role: "ops", "counterparty");
        None: the demo leaves this kind out."""
        return None

    def dev_table(self, chats: Mapping[str, str], data_dir: Path) -> Mapping[str, object] | None:
        """The table the dev profile runs this kind with (`run --dev`, the operator tools'
        `--dev`; files under `data_dir`); pure. None: the profile leaves the kind out."""
        return None


def terms(pairs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Ordered display terms, leaving out absent optional ones."""
    return [{"name": name, "value": value} for name, value in pairs.items() if value is not None]
