"""Which world an operation acts in, as every surface marks it (design principle 8): the
card's header tag, the outcome titles ("Filled · EMULATOR"), the dashboard, the CLI and the
chat replies all take it from here, in the catalogue's words (`cards/strings.py`).

The world travels with the projection (`view.world`, store.vocabulary.World or None);
a view that predates it says only `simulated`, which then meant the built-in simulated venue.
An operation of a kind that is not a venue (a message, a service call) has no world and
shows no mark. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cards.strings import LANGS, LARK_LOCALE, Lang, text
from store import OperationView, World

# Lark text_tag colours of the header's mark: LIVE in the one that warns
WORLD_COLOUR: Mapping[World, str] = {
    World.SIMULATED: "orange",
    World.EMULATOR: "turquoise",
    World.TESTNET: "blue",
    World.LIVE: "red",
}


def world_of(view: OperationView) -> World | None:
    """The world `view` acts in (None: not a venue, no mark)."""
    if view.world is not None:
        return view.world
    if "world" not in view.model_fields_set and view.simulated:  # an answer predating it
        return World.SIMULATED
    return None


def world_words(world: World, lang: Lang) -> str:
    """SIMULATED / EMULATOR / TESTNET / LIVE in `lang`."""
    return text(f"world.{world.value}", lang)


def world_mark(view: OperationView, lang: Lang) -> str | None:
    """The world's mark in `lang` (None: no world, nothing to mark)."""
    world = world_of(view)
    return None if world is None else world_words(world, lang)


def in_world(status: str, world: World | None, lang: Lang) -> str:
    """An outcome's title with its world: "Filled · EMULATOR" (as it is without one)."""
    if world is None:
        return status
    return text("outcome.in_world", lang, status=status, world=world_words(world, lang))


def world_tag(view: OperationView, lang: Lang) -> dict[str, Any] | None:
    """The card header's text_tag for the world (None: no world, no tag)."""
    world = world_of(view)
    if world is None:
        return None
    return {
        "tag": "text_tag",
        "element_id": "world",
        "text": {
            "tag": "plain_text",
            "content": world_words(world, lang),
            "i18n_content": {LARK_LOCALE[each]: world_words(world, each) for each in LANGS},
        },
        "color": WORLD_COLOUR[world],
    }
