"""Configuration of the message domain ([domains.message])."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from workers.domains.types import Name


class Destination(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Name = Field(description="destination name proposals refer to")
    chat_id: str = Field(pattern=r"^oc_[A-Za-z0-9_-]{1,120}$", description="counterparty chat")
    counterparty: Name = Field(description="who is on the other side")
    # None: drafts and their sends are on the dashboard and the API only
    ops_chat_id: str | None = Field(
        default=None,
        pattern=r"^oc_[A-Za-z0-9_-]{1,120}$",
        description="internal chat for filing receipts",
    )


class MessageSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    # a card holds at most 30 KB; 6000 CJK characters (18 KB) leave room for the rest
    max_text_chars: int = Field(default=4000, ge=1, le=6000)
    destinations: list[Destination] = Field(default_factory=list)

    def destination(self, name: str) -> Destination | None:
        return next((d for d in self.destinations if d.name == name), None)
