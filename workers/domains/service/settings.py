"""Configuration of the service domain ([domains.service]): the services countersign may call
and the actions each one offers, with a JSON Schema of every action's arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, JsonValue, StringConstraints, model_validator

from workers.domains.types import Name

EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Z_][A-Z0-9_]{0,127}$")]
Currency = Annotated[str, StringConstraints(pattern=r"^[A-Z0-9]{2,12}$")]
# shown as the card's title, so one short line of plain words
Title = Annotated[
    str, StringConstraints(min_length=1, max_length=80, pattern=r"^[^\x00-\x1f<>*_~`\[\]|\\#]+$")
]
JsonSchema = dict[str, JsonValue]


class Action(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Name = Field(description="action name proposals refer to (payload.action)")
    title: Title = Field(description="what the card calls it: 'Refund'")
    title_zh: Title | None = Field(default=None, description="its Chinese title (default: title)")
    # a JSON Schema (draft 2020-12) of the arguments object, inline or in a JSON file
    arguments: JsonSchema | None = None
    schema_file: Path | None = None
    # the expiry a proposal of this action gets when it names none (bounded by [operations])
    expires_in_s: int | None = Field(default=None, ge=30, le=604_800)

    @model_validator(mode="after")
    def _one_schema(self) -> Self:
        if (self.arguments is None) == (self.schema_file is None):
            raise ValueError(
                f"action {self.name!r}: give exactly one of `arguments` (an inline JSON Schema) "
                "or `schema_file` (a JSON file holding one)"
            )
        if self.schema_file is not None:
            try:
                loaded = json.loads(self.schema_file.read_text(encoding="utf-8"))
            except (OSError, ValueError) as error:
                raise ValueError(
                    f"action {self.name!r}: schema_file {str(self.schema_file)!r} is not a "
                    f"readable JSON file ({error})"
                ) from None
            if not isinstance(loaded, dict):
                raise ValueError(f"action {self.name!r}: schema_file must hold a JSON object")
            self.arguments = loaded
        return self

    @property
    def arguments_schema(self) -> JsonSchema:
        assert self.arguments is not None  # the validator loaded it
        return self.arguments


class Service(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Name = Field(description="service name proposals refer to (payload.service)")
    # the audience whose operators decide this service's calls (propose to it)
    audience: Name | None = None
    endpoint: str = Field(description="https URL the confirmed call is POSTed to")
    # GET <status_endpoint>?idempotency_key=...: what became of a call whose answer was lost
    status_endpoint: str | None = None
    secret_env: EnvName = Field(description="environment variable holding the signing secret")
    # the service runs a repeated Idempotency-Key once and answers it again: an unknown call
    # may then be sent again with the same key
    idempotent: bool = False
    # how long the service remembers a key (countersign sends it again only inside this)
    idempotency_window_s: int = Field(default=3600, ge=60, le=604_800)
    timeout_s: float = Field(default=10.0, gt=0, le=120)
    # loopback or private addresses are allowed for this service (only one you run yourself)
    allow_internal: bool = False
    actions: list[Action] = Field(min_length=1)

    def action(self, name: str) -> Action | None:
        return next((a for a in self.actions if a.name == name), None)


class ServiceSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    services: list[Service] = Field(default_factory=list)

    def service(self, name: str) -> Service | None:
        return next((s for s in self.services if s.name == name), None)

    def action(self, service: str, action: str) -> tuple[Service, Action] | None:
        found = self.service(service)
        chosen = found.action(action) if found is not None else None
        return None if found is None or chosen is None else (found, chosen)
