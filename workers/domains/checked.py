"""The core's handle on a registered domain: `Checked`, every hook of `Domain[P, S]` over
`BaseModel`, each argument narrowed to the domain's own types before the call (a wrong one
is a bug of ours: TypeError). The registry holds one per kind (`Plugin`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel

from kernel.problems import FieldProblem
from store import World
from workers.domains.base import (
    STORED,
    Amount,
    DemoSetup,
    Domain,
    FilingReads,
    Notice,
    Projection,
    RunnerContext,
    SecretEnv,
)

if TYPE_CHECKING:
    from workers.domains.execution import Runner

# Checked only hands its types out (narrowed), so any domain's handle is a Plugin
P_co = TypeVar("P_co", bound=BaseModel, covariant=True)
S_co = TypeVar("S_co", bound=BaseModel, covariant=True)


class Checked(Generic[P_co, S_co]):
    """The core's handle on a registered domain: every hook over `BaseModel`, its arguments
    narrowed to the domain's own types (a wrong one is a bug of ours: TypeError)."""

    def __init__(self, domain: Domain[P_co, S_co]) -> None:
        self.domain = domain
        self.kind = domain.kind
        self.config_table = domain.config_table
        self.settings_model: type[BaseModel] = domain.settings_model
        self.executor_name = domain.executor_name
        self.executor_revision = domain.executor_revision
        self.simulated = domain.simulated
        self.words = domain.words
        self.outcomes = domain.outcomes
        self.examples = domain.examples
        self.free_text_fields = domain.free_text_fields
        self.supersedes_open_drafts = domain.supersedes_open_drafts
        self.needs_capabilities = domain.needs_capabilities
        self.moves_amount = domain.moves_amount
        self.versions = tuple(sorted(domain.payload_models))

    def _payload(self, payload: BaseModel) -> P_co:
        for model in self.domain.payload_models.values():
            if isinstance(payload, model):
                return payload
        raise TypeError(f"{type(payload).__name__} is not a {self.kind} payload")

    def _settings(self, settings: BaseModel) -> S_co:
        if not isinstance(settings, self.domain.settings_model):
            raise TypeError(f"{type(settings).__name__} is not {self.kind} settings")
        return settings

    def schema(self, version: int) -> type[BaseModel] | None:
        return self.domain.schema(version)

    def stored(self, version: int, payload: Mapping[str, Any]) -> BaseModel | None:
        """A payload read back from the store, admitted under the rules of its day (its
        validators see {"stored": True}); None: no schema of that version."""
        schema = self.domain.schema(version)
        return None if schema is None else schema.model_validate(payload, context=STORED)

    def enabled(self, settings: BaseModel) -> bool:
        return self.domain.enabled(self._settings(settings))

    def payload_schema(self, settings: BaseModel) -> dict[str, Any]:
        return self.domain.payload_schema(self._settings(settings))

    def project(self, payload: BaseModel) -> Projection:
        """The domain's projection with its words: the kind's, and each term's label (a
        label the domain set itself, e.g. from a configured schema, is kept)."""
        projection = self.domain.project(self._payload(payload))
        projection["words"] = {
            "title": self.words.title.as_json(),
            "waiting": self.words.waiting.as_json(),
            "partly": self.words.partly.as_json(),
        }
        projection["terms"] = self.labelled(projection.get("terms", []))
        return projection

    def labelled(self, terms: list[dict[str, Any]]) -> list[dict[str, Any]]:
        labels = self.words.terms
        return [
            term
            if "label" in term or term["name"] not in labels
            else {**term, "label": labels[term["name"]].as_json()}
            for term in terms
        ]

    def world(self, payload: BaseModel, settings: BaseModel) -> World | None:
        return self.domain.world(self._payload(payload), self._settings(settings))

    def worlds(self, settings: BaseModel) -> list[World]:
        """The worlds the kind may act in, each once, in the vocabulary's order."""
        found = set(self.domain.worlds(self._settings(settings)))
        return [world for world in World if world in found]

    def executor(self, payload: BaseModel, settings: BaseModel) -> tuple[str, str]:
        return self.domain.executor(self._payload(payload), self._settings(settings))

    def target_ref(self, payload: BaseModel) -> str:
        return self.domain.target_ref(self._payload(payload))

    async def open_runner(self, settings: BaseModel, context: RunnerContext) -> Runner | None:
        return await self.domain.open_runner(self._settings(settings), context)

    def admit(self, payload: BaseModel, settings: BaseModel) -> list[FieldProblem]:
        return self.domain.admit(self._payload(payload), self._settings(settings))

    def capability_problems(self, payload: BaseModel, capabilities: object) -> list[FieldProblem]:
        return self.domain.capability_problems(self._payload(payload), capabilities)

    def notional(
        self, payload: BaseModel, settings: BaseModel, capabilities: object
    ) -> Amount | None:
        return self.domain.notional(self._payload(payload), self._settings(settings), capabilities)

    def preconditions(self, payload: BaseModel, settings: BaseModel, reading: object) -> Projection:
        additions = self.domain.preconditions(
            self._payload(payload), self._settings(settings), reading
        )
        if "terms" in additions:
            additions["terms"] = self.labelled(additions["terms"])
        return additions

    async def read_for_filing(
        self, payload: Mapping[str, object], settings: BaseModel, reads: FilingReads
    ) -> object:
        return await self.domain.read_for_filing(payload, self._settings(settings), reads)

    def audiences(self, payload: BaseModel, settings: BaseModel) -> Sequence[str] | None:
        return self.domain.audiences(self._payload(payload), self._settings(settings))

    def expires_in_s(self, payload: BaseModel, settings: BaseModel) -> int | None:
        return self.domain.expires_in_s(self._payload(payload), self._settings(settings))

    def auto_send_after_s(self, payload: BaseModel) -> int | None:
        return self.domain.auto_send_after_s(self._payload(payload))

    def auto_send_limits(self, settings: BaseModel) -> dict[str, int]:
        return self.domain.auto_send_limits(self._settings(settings))

    def filing_receipt(self, payload: BaseModel, settings: BaseModel) -> Notice | None:
        return self.domain.filing_receipt(self._payload(payload), self._settings(settings))

    def config_problems(self, settings: BaseModel) -> list[FieldProblem]:
        return self.domain.config_problems(self._settings(settings))

    def secret_envs(self, settings: BaseModel) -> Sequence[SecretEnv]:
        return self.domain.secret_envs(self._settings(settings))

    def policy(self, settings: BaseModel) -> dict[str, Any]:
        return self.domain.policy(self._settings(settings))

    def outside_chats(self, settings: BaseModel) -> Mapping[str, str]:
        return self.domain.outside_chats(self._settings(settings))

    def internal_chats(self, settings: BaseModel) -> list[tuple[str, str, str]]:
        return self.domain.internal_chats(self._settings(settings))

    def demo(self, chats: Mapping[str, str], workdir: Path) -> DemoSetup | None:
        return self.domain.demo(chats, workdir)

    def dev_table(self, chats: Mapping[str, str], data_dir: Path) -> Mapping[str, object] | None:
        return self.domain.dev_table(chats, data_dir)


# What the core holds for every registered domain, whatever its payload and settings.
Plugin = Checked[BaseModel, BaseModel]
