"""The rules of a JSON 2.0 card's forms, checked once its structure passed (schema.py).

* A `form` stands directly in `body.elements` and holds no `form` and no `table` (form
  container, 2.0: "表单容器组件不可被内嵌在其它组件内，只可放在卡片根节点下"; "不支持内嵌表格和表单
  容器"): 200621, the sandbox's choice of sub-code.
* The form and every interactive component in it (buttons, inputs, selects, pickers, checkers)
  has a non-empty `name`. Lark documents 200530 as the client error of a form with an empty
  `name` (docs/lark-reference.md §1.3); the sandbox refuses such a card when it is sent,
  with that sub-code (its choice: whether the create call refuses it is not documented).
* A `name` is used once in the card ("在卡片全局内唯一"): 11310 `name(x) duplicate`, as seen in
  third-party reports (§6.1).
* A button's `form_action_type` is `submit` or `reset`; an input's `max_length` is an integer
  from 1 to 1000: 200621 (the sandbox's choice).
"""

from __future__ import annotations

from typing import Any

from larksandbox.cards.problem import (
    FORM_NAME_EMPTY,
    LIMIT_OR_STATE,
    PARSE_ERR_MSG,
    PARSE_ERROR,
    CardProblem,
    card_content_failed,
)

FIELD_TAGS = frozenset(
    {
        "button",
        "input",
        "select_static",
        "multi_select_static",
        "select_person",
        "multi_select_person",
        "date_picker",
        "picker_time",
        "picker_datetime",
        "select_img",
        "checker",
    }
)
FORM_ACTIONS = frozenset({"submit", "reset"})
INPUT_MAX_LENGTH = 1000


class _Refused(Exception):
    def __init__(self, problem: CardProblem) -> None:
        super().__init__(problem.msg)
        self.problem = problem


def _refused(sub_code: int, msg: str, value: str, path: list[str]) -> _Refused:
    where = " -> ".join(["ROOT", *path])
    return _Refused(card_content_failed(sub_code, msg, value=value, path=where))


def _parse_error(path: list[str], value: str) -> _Refused:
    return _refused(PARSE_ERROR, PARSE_ERR_MSG, value, path)


class _FormWalk:
    def __init__(self) -> None:
        self.names: set[str] = set()

    def elements(self, value: Any, path: list[str], *, root: bool, form: str | None) -> None:
        for index, node in enumerate(value if isinstance(value, list) else []):
            if isinstance(node, dict):
                tagged = [*path, f"[{index}](tag: {node.get('tag')})"]
                self.component(node, tagged, root=root, form=form)

    def component(
        self, node: dict[str, Any], path: list[str], *, root: bool, form: str | None
    ) -> None:
        tag = node.get("tag")
        if tag == "form" and not root:
            raise _parse_error(path, "a form stands only in body.elements, not in a component")
        if tag == "table" and form is not None:
            raise _parse_error(path, "a form holds no table")
        name = node.get("name")
        if (tag == "form" or (form is not None and tag in FIELD_TAGS)) and not (
            isinstance(name, str) and name
        ):
            where = "a form" if tag == "form" else f"a {tag} in form {form!r}"
            raise _refused(FORM_NAME_EMPTY, "name is empty", f"{where} needs a name", path)
        if isinstance(name, str) and name:
            if name in self.names:
                raise _refused(LIMIT_OR_STATE, f"name({name}) duplicate", "", path)
            self.names.add(name)
        action = node.get("form_action_type")
        if tag == "button" and action is not None and action not in FORM_ACTIONS:
            raise _parse_error(path, f'form_action_type {action!r}: "submit" or "reset"')
        length = node.get("max_length")
        if tag == "input" and length is not None:
            if not isinstance(length, int) or isinstance(length, bool):
                raise _parse_error(path, f"max_length {length!r}: an integer")
            if not 1 <= length <= INPUT_MAX_LENGTH:
                raise _parse_error(path, f"max_length {length}: from 1 to {INPUT_MAX_LENGTH}")
        inner = name if tag == "form" and isinstance(name, str) else form
        if "elements" in node:
            self.elements(node["elements"], [*path, "elements"], root=False, form=inner)
        if tag == "column_set" and isinstance(node.get("columns"), list):
            for index, column in enumerate(node["columns"]):
                if isinstance(column, dict):
                    inside = [*path, "columns", f"[{index}](tag: column)", "elements"]
                    self.elements(column.get("elements"), inside, root=False, form=form)


def form_problem(card: dict[str, Any]) -> CardProblem | None:
    """Why Lark refuses this JSON 2.0 card's forms or names, if it does (the first problem)."""
    body = card.get("body")
    if not isinstance(body, dict):
        return None
    try:
        _FormWalk().elements(body.get("elements"), ["body", "elements"], root=True, form=None)
    except _Refused as refused:
        return refused.problem
    return None
