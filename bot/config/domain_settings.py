"""`[domains]`: one table per registered domain, each validated against that domain's own
settings model (`Domain.settings_model`), under the name it registered (`config_table`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    create_model,
    model_validator,
)

from workers.domains import DOMAINS


class DomainSettings(BaseModel):
    """`[domains.<table>]`: each table validated against the settings model of the domain
    registered under that config table, when the config is read (a domain registered before
    loading is included); a table nobody registered is refused as an unknown key."""

    model_config = ConfigDict(extra="allow")  # the tables, each its domain's settings

    @classmethod
    def table_models(cls) -> dict[str, type[BaseModel]]:
        """Config table -> the settings model of the domain registered under it."""
        return {plugin.config_table: plugin.settings_model for plugin in DOMAINS.values()}

    @model_validator(mode="wrap")
    @classmethod
    def _tables(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        if isinstance(data, DomainSettings) or not isinstance(data, Mapping):
            return handler(data)
        tables = cls.table_models()
        fields: dict[str, Any] = {
            name: (model, Field(default_factory=model)) for name, model in tables.items()
        }
        # an unknown table is an unknown key like any other, reported with the known tables'
        # own problems (bot/config/validation.py names the table it is closest to)
        shape = create_model("DomainTables", __config__=ConfigDict(extra="forbid"), **fields)
        validated = shape.model_validate(dict(data))
        return handler({name: getattr(validated, name) for name in tables})

    def tables(self) -> dict[str, BaseModel]:
        """Config table -> its validated settings."""
        return {
            name: value
            for name, value in (self.__pydantic_extra__ or {}).items()
            if isinstance(value, BaseModel)
        }

    def for_kind(self, kind: str) -> BaseModel:
        """The settings of `kind`'s domain (KeyError: no such kind); a domain registered
        after the config was read runs on its defaults."""
        plugin = DOMAINS[kind]
        settings = self.tables().get(plugin.config_table)
        return plugin.settings_model() if settings is None else settings
