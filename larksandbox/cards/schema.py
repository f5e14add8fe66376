"""A JSON 2.0 card's structure, checked as Lark does before it creates or updates the card.

"In JSON 2.0, an unsupported property is an error" (1.0 ignored it), so every object the card
is built of is checked against the properties documented for its tag: the card itself, config,
header, body, each component, the columns of a column set, text elements (plain_text, lark_md)
and icons. Values the card author owns (callback values, chart specs, table rows, options) are
not walked. Beyond the property sets:

* a tag Lark does not know is refused; `note` and the `action` module exist only in 1.0 and
  are refused with Lark's 200861 ("cards of schema V2 no longer support this capability");
* at most 200 elements or components per card, text elements included (11310, "element
  exceeds the limit"); counted here: every component, column, text element, icon and text tag;
* `element_id`: unique in the card (11310, duplicate), a letter then letters, digits or `_`,
  at most 20 characters;
* a button's text (each locale) at most 100 characters;
* a `confirm` dialog has a title;
* forms: where they stand, `name`s, `form_action_type`, `max_length` (larksandbox/cards/formcheck.py).

Sources and which sub-codes are documented: docs/lark-reference.md §6.1.
"""

from __future__ import annotations

import re
from typing import Any

from larksandbox.cards.formcheck import form_problem
from larksandbox.cards.problem import (
    LIMIT_OR_STATE,
    PARSE_ERR_MSG,
    PARSE_ERROR,
    SCHEMA_V2_UNSUPPORTED,
    CardProblem,
    card_content_failed,
)

ELEMENT_LIMIT = 200
ELEMENT_ID = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,19}")
BUTTON_TEXT_MAX = 100

ROOT = frozenset({"schema", "config", "card_link", "header", "body"})
CONFIG = frozenset(
    {
        "streaming_mode",
        "streaming_config",
        "summary",
        "locales",
        "enable_forward",
        "update_multi",
        "width_mode",
        "use_custom_translation",
        "enable_forward_interaction",
        "style",
    }
)
SUMMARY = frozenset({"content", "i18n_content"})
CARD_LINK = frozenset({"url", "pc_url", "ios_url", "android_url"})
HEADER = frozenset(
    {"title", "subtitle", "text_tag_list", "i18n_text_tag_list", "template", "icon", "padding"}
)
TEXT_TAG = frozenset({"tag", "element_id", "text", "color"})
LAYOUT = frozenset(
    {
        "direction",
        "padding",
        "horizontal_spacing",
        "horizontal_align",
        "vertical_spacing",
        "vertical_align",
    }
)
BODY = LAYOUT | {"elements"}
TEXT_TAGS = frozenset({"plain_text", "lark_md"})
TEXT = frozenset(
    {
        "tag",
        "element_id",
        "content",
        "i18n_content",
        "text_size",
        "text_color",
        "text_align",
        "lines",
    }
)
ICON_TAGS = frozenset({"standard_icon", "custom_icon"})
ICON = frozenset({"tag", "token", "color", "img_key"})
CONFIRM = frozenset({"title", "text"})

BASE = frozenset({"tag", "element_id", "margin"})  # every component (2.0 adds the last two)
INTERACTION = frozenset({"disabled", "disabled_tips", "hover_tips", "confirm", "behaviors"})
FIELD = frozenset({"name", "required", "placeholder", "width", "value"})  # form-able inputs

COLUMN = BASE | {
    "background_style",
    "width",
    "weight",
    "horizontal_spacing",
    "horizontal_align",
    "vertical_align",
    "vertical_spacing",
    "direction",
    "padding",
    "elements",
    "action",
}
COMPONENTS: dict[str, frozenset[str]] = {
    # containers
    "column_set": BASE
    | {"horizontal_spacing", "horizontal_align", "flex_mode", "background_style", "action"}
    | {"columns"},
    "form": BASE | LAYOUT | {"name", "elements"},
    "interactive_container": BASE
    | LAYOUT
    | INTERACTION
    | {"width", "height", "background_style", "has_border", "border_color", "corner_radius"}
    | {"elements"},
    "collapsible_panel": BASE
    | LAYOUT
    | {"expanded", "background_color", "header", "border", "elements"},
    # display
    "div": BASE | {"width", "text", "icon", "fields"},
    "markdown": BASE | {"content", "i18n_content", "text_size", "text_align", "icon"},
    "img": BASE
    | {"img_key", "alt", "title", "corner_radius", "scale_type", "size", "transparent"}
    | {"preview"},
    "img_combination": BASE
    | {"combination_mode", "combination_transparent", "corner_radius", "img_list"},
    "person": BASE | {"user_id", "size", "show_avatar", "show_name", "style"},
    "person_list": BASE
    | {"persons", "size", "lines", "show_avatar", "show_name", "icon", "drop_invalid_user_id"},
    "chart": BASE | {"chart_spec", "aspect_ratio", "color_theme", "preview", "height"},
    "table": BASE
    | {"page_size", "row_height", "row_max_height", "freeze_first_column", "header_style"}
    | {"columns", "rows"},
    "hr": BASE,
    "audio": BASE | {"file_key", "audio_id", "show_time", "style", "width"},
    # interactive
    "button": BASE
    | INTERACTION
    | {"type", "size", "width", "text", "icon", "name", "form_action_type"},
    "overflow": BASE | INTERACTION | {"width", "options", "value"},
    "input": BASE
    | INTERACTION
    | FIELD
    | {"default_value", "max_length", "input_type", "show_icon", "rows", "auto_resize"}
    | {"max_rows", "label", "label_position", "fallback"},
    "select_static": BASE | INTERACTION | FIELD | {"type", "initial_option", "options"},
    "multi_select_static": BASE | INTERACTION | FIELD | {"type", "selected_values", "options"},
    "select_person": BASE | INTERACTION | FIELD | {"type", "initial_option", "options"},
    "multi_select_person": BASE | INTERACTION | FIELD | {"type", "selected_values", "options"},
    "date_picker": BASE | INTERACTION | FIELD | {"initial_date"},
    "picker_time": BASE | INTERACTION | FIELD | {"initial_time"},
    "picker_datetime": BASE | INTERACTION | FIELD | {"initial_datetime"},
    "select_img": BASE
    | INTERACTION
    | FIELD
    | {"multi_select", "layout", "can_preview", "aspect_ratio", "options"},
    "checker": BASE
    | INTERACTION
    | {"name", "checked", "text", "overall_checkable", "button_area", "checked_style"}
    | {"padding", "value"},
}
# tag -> what 2.0 offers instead (card-json-v2-breaking-changes-release-notes)
V1_ONLY = {
    "action": "buttons go straight into elements or columns",
    "note": "a div with notation text size and grey text",
}
CONTAINERS = frozenset({"form", "interactive_container", "collapsible_panel"})


class _Refused(Exception):
    def __init__(self, problem: CardProblem) -> None:
        super().__init__(problem.msg)
        self.problem = problem


def _path(path: list[str]) -> str:
    return " -> ".join(["ROOT", *path])


def _parse_error(path: list[str], value: str) -> _Refused:
    return _Refused(card_content_failed(PARSE_ERROR, PARSE_ERR_MSG, value=value, path=_path(path)))


class _Walk:
    """One pass over a card: the first problem in document order, then the element count."""

    def __init__(self) -> None:
        self.count = 0
        self.ids: set[str] = set()

    def props(self, node: dict[str, Any], allowed: frozenset[str], path: list[str]) -> None:
        for key in node:
            if key not in allowed:
                raise _parse_error(path, f"unknown property: {key}")
        element_id = node.get("element_id")
        if element_id is None:
            return
        if not isinstance(element_id, str) or not ELEMENT_ID.fullmatch(element_id):
            raise _parse_error(
                path,
                f"element_id {element_id!r}: a letter, then letters, digits or _, "
                "at most 20 characters",
            )
        if element_id in self.ids:
            raise _Refused(
                card_content_failed(
                    LIMIT_OR_STATE, f"element_id({element_id}) duplicate", path=_path(path)
                )
            )
        self.ids.add(element_id)

    def obj(self, value: Any, path: list[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _parse_error(path, "expected a JSON object")
        return value

    def card(self, card: dict[str, Any]) -> None:
        self.props(card, ROOT, [])
        if "config" in card:
            config = self.obj(card["config"], ["config"])
            self.props(config, CONFIG, ["config"])
            if "summary" in config:
                summary = self.obj(config["summary"], ["config", "summary"])
                self.props(summary, SUMMARY, ["config", "summary"])
        if "card_link" in card:
            self.props(self.obj(card["card_link"], ["card_link"]), CARD_LINK, ["card_link"])
        if "header" in card:
            self.header(self.obj(card["header"], ["header"]))
        if "body" in card:
            body = self.obj(card["body"], ["body"])
            self.props(body, BODY, ["body"])
            self.elements(body.get("elements", []), ["body", "elements"])

    def header(self, header: dict[str, Any]) -> None:
        self.props(header, HEADER, ["header"])
        for key in ("title", "subtitle"):
            if key in header:
                self.text(header[key], ["header", key])
        if "icon" in header:
            self.icon(header["icon"], ["header", "icon"])
        tags = header.get("text_tag_list", [])
        if not isinstance(tags, list):
            raise _parse_error(["header", "text_tag_list"], "expected a list")
        for index, item in enumerate(tags):
            path = ["header", "text_tag_list", f"[{index}]"]
            tag = self.obj(item, path)
            if tag.get("tag") != "text_tag":
                raise _parse_error(path, f"unknown tag {tag.get('tag')}")
            self.props(tag, TEXT_TAG, path)
            self.count += 1
            if "text" in tag:
                self.text(tag["text"], [*path, "text"])

    def elements(self, value: Any, path: list[str]) -> None:
        if not isinstance(value, list):
            raise _parse_error(path, "elements must be a list")
        for index, item in enumerate(value):
            tag = item.get("tag") if isinstance(item, dict) else None
            self.component(item, [*path, f"[{index}](tag: {tag})"])

    def component(self, value: Any, path: list[str]) -> None:
        node = self.obj(value, path)
        tag = node.get("tag")
        if isinstance(tag, str) and tag in V1_ONLY:
            raise _Refused(
                card_content_failed(
                    SCHEMA_V2_UNSUPPORTED,
                    "cards of schema V2 no longer support this capability",
                    value=f"unsupported tag {tag} (2.0: {V1_ONLY[tag]})",
                    path=_path(path),
                )
            )
        if not isinstance(tag, str) or tag not in COMPONENTS:
            raise _parse_error(path, f"unknown tag {tag}")
        self.props(node, COMPONENTS[tag], path)
        self.count += 1
        for key, child in node.items():
            if key in ("tag", "element_id", "margin"):
                continue
            if key == "elements" and tag in CONTAINERS:
                self.elements(child, [*path, key])
            elif key == "columns" and tag == "column_set":
                self.columns(child, [*path, key])
            elif key == "confirm":
                self.confirm(child, [*path, key])
            elif isinstance(child, dict) and "tag" in child:
                self.tagged(child, [*path, key])
        if tag == "button" and isinstance(node.get("text"), dict):
            self.button_text(node["text"], [*path, "text"])

    def columns(self, value: Any, path: list[str]) -> None:
        if not isinstance(value, list):
            raise _parse_error(path, "columns must be a list")
        for index, item in enumerate(value):
            tag = item.get("tag") if isinstance(item, dict) else None
            column_path = [*path, f"[{index}](tag: {tag})"]
            column = self.obj(item, column_path)
            if tag != "column":
                raise _parse_error(column_path, f"unknown tag {tag} (a column set holds columns)")
            self.props(column, COLUMN, column_path)
            self.count += 1
            if "elements" in column:
                self.elements(column["elements"], [*column_path, "elements"])

    def tagged(self, node: dict[str, Any], path: list[str]) -> None:
        """A text element or an icon in one of a component's properties."""
        if node.get("tag") in ICON_TAGS:
            self.icon(node, path)
        else:
            self.text(node, path)

    def text(self, value: Any, path: list[str]) -> None:
        node = self.obj(value, path)
        if node.get("tag") not in TEXT_TAGS:
            raise _parse_error(path, f"unknown tag {node.get('tag')} (a text is plain_text)")
        self.props(node, TEXT, path)
        self.count += 1

    def icon(self, value: Any, path: list[str]) -> None:
        node = self.obj(value, path)
        if node.get("tag") not in ICON_TAGS:
            raise _parse_error(path, f"unknown tag {node.get('tag')} (an icon is standard_icon)")
        self.props(node, ICON, path)
        self.count += 1

    def confirm(self, value: Any, path: list[str]) -> None:
        node = self.obj(value, path)
        self.props(node, CONFIRM, path)
        if "title" not in node:
            raise _parse_error(path, "a confirm dialog needs a title")
        for key in ("title", "text"):
            if key in node:
                self.text(node[key], [*path, key])

    def button_text(self, text: dict[str, Any], path: list[str]) -> None:
        shown = [text.get("content", "")]
        i18n_content = text.get("i18n_content")
        if isinstance(i18n_content, dict):
            shown += list(i18n_content.values())
        for each in shown:
            if isinstance(each, str) and len(each) > BUTTON_TEXT_MAX:
                raise _parse_error(
                    path, f"button text is {len(each)} characters, at most {BUTTON_TEXT_MAX}"
                )


def schema_problem(card: dict[str, Any]) -> CardProblem | None:
    """Why Lark refuses this JSON 2.0 card's structure, if it does (the first problem found)."""
    walk = _Walk()
    try:
        walk.card(card)
    except _Refused as refused:
        return refused.problem
    if (problem := form_problem(card)) is not None:
        return problem
    if walk.count > ELEMENT_LIMIT:
        return card_content_failed(
            LIMIT_OR_STATE,
            "element exceeds the limit",
            value=f"{walk.count} elements or components, at most {ELEMENT_LIMIT}",
        )
    return None


def element_count(card: dict[str, Any]) -> int:
    """The elements and components of a 2.0 card (one that passes the other checks), as
    counted against the limit of 200."""
    walk = _Walk()
    walk.card(card)
    return walk.count
