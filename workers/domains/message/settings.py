"""Configuration of the message domain ([domains.message])."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from workers.domains.types import Name

MAX_TEXT_CHARS_CEILING = 5000


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
    # None (the default): no draft to it sends itself; else the longest time box a draft may
    # ask for (payload.auto_send_after_s) before it is sent unless someone decides
    auto_send_max_s: int | None = Field(default=None, ge=10, le=86_400)
    # None: no baseline gate for this destination (workers/domains/message/baseline.py)
    baseline_file: Path | None = Field(
        default=None,
        description="JSON or TOML file of per-counterparty contract status and facts",
    )


class MessageSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    # A card holds at most 30 KB, and a character can cost 4 bytes of the request (an emoji;
    # a quote or a backslash, escaped twice): 5000 of them (20 KB) leave room for the terms,
    # the buttons, the note form and the draft's stamps.
    max_text_chars: int = Field(default=4000, ge=1, le=MAX_TEXT_CHARS_CEILING)
    destinations: list[Destination] = Field(default_factory=list)

    def destination(self, name: str) -> Destination | None:
        return next((d for d in self.destinations if d.name == name), None)
