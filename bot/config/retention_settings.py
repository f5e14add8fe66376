"""`[retention]`: how long `countersign prune` keeps each kind of growing history whole, in
days (store/retention/prune.py says what each prune keeps)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class RetentionSettings(BaseModel):
    """Each window at least a day: Lark redelivers a click for hours, and a replay is
    answered from the inbox."""

    model_config = ConfigDict(extra="forbid")

    inbox_days: int = Field(default=30, ge=1, le=36500)
    card_revisions_days: int = Field(default=30, ge=1, le=36500)
    delivery_attempts_days: int = Field(default=30, ge=1, le=36500)
