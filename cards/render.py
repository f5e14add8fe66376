"""Operation projection -> Lark card JSON 2.0. Pure: the same view renders the same card.

Terms are shown as plain_text so nothing a proposer sends can format, mention or link. A
message text is one shaded block with its size stated, so it cannot pose as other terms or
hide how far it runs. A person is an <at> mention only when Lark is known to accept the open
id (the audience's operators, verified at setup); Lark refuses a whole card for an unknown
one, so anyone else is named in plain text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, tzinfo
from typing import Any

from cards.approval import approval_elements, confirm_dialog
from cards.outcomes import newest_per_stage, outcome_lines, plain_text
from cards.strings import LANGS, LARK_LOCALE, Lang, i18n, text
from store.timeutil import parse_iso_utc

CALLBACK_VALUE_VERSION = 1
# the reject form's reason input (bot/ingress/reject_reason.py reads what it sends)
REASON_FIELD = "reason"
REASON_MAX_CHARS = 300
# the form's second submit: a reject that says on purpose it gives no reason (what was typed
# is not sent on)
WITHOUT_REASON = "reject_no_reason"
OPEN_ID = re.compile(r"ou_[A-Za-z0-9_-]{1,120}")
SHORT_DIGEST = 12
HEADER_TEMPLATE = {
    "prepared": "orange",
    "awaiting_confirmation": "orange",
    "claimed": "green",
    "outcome_observed": "green",
    "rejected": "red",
    "cancelled": "grey",
    "expired": "grey",
    "superseded": "grey",
}
OPEN_STATES = frozenset({"prepared", "awaiting_confirmation"})
OUTCOME_TEMPLATE = {
    "accepted": "green",
    "resting": "green",
    "partially_filled": "green",
    "filled": "green",
    "sent": "green",
    "unknown": "yellow",
    "rejected": "red",
    "cancelled": "red",
    "preflight_rejected": "red",
    "reservation_refused": "red",
    "not_submitted": "red",
    "unresolved": "orange",
}
EXECUTING = frozenset({"queued", "preflight", "reserved", "dispatching"})


def callback_value(view: dict[str, Any], action: str) -> dict[str, Any]:
    return {
        "op": view["id"],
        "action": action,
        "digest": view["confirm_digest"],
        "v": CALLBACK_VALUE_VERSION,
    }


def _when(iso: str, tz: tzinfo) -> str:
    moment = parse_iso_utc(iso).astimezone(tz)
    return moment.strftime("%Y-%m-%d %H:%M ") + (moment.tzname() or "UTC")


def _span(seconds: float, lang: Lang) -> str:
    seconds = abs(int(seconds))
    if seconds >= 3600:
        return text("span.hours", lang, h=str(seconds // 3600), m=f"{seconds % 3600 // 60:02d}")
    if seconds >= 60:
        return text("span.minutes", lang, m=str(seconds // 60))
    return text("span.seconds", lang, s=str(seconds))


def _relative(iso: str, now: datetime, lang: Lang) -> str:
    delta = (parse_iso_utc(iso) - now).total_seconds()
    return text("relative.in" if delta >= 0 else "relative.ago", lang, span=_span(delta, lang))


def _value(value: Any, lang: Lang) -> str:
    if isinstance(value, bool):
        return text("yes" if value else "no", lang)
    if isinstance(value, list):
        return ", ".join(str(each) for each in value)
    return str(value)


LONG_VALUE = 120  # longer values get their own element, so i18n does not copy them


def _line(label_key: str, value: Callable[[Lang], str], lang: Lang) -> list[dict[str, Any]]:
    """`Label: value` as plain text, each locale wholly in its language.

    A long value (a message text) is shown once, under its translated label: repeating it
    per locale would triple the card's size (Lark caps cards at 30 KB).
    """
    if len(value(lang)) > LONG_VALUE:
        return [
            {
                "tag": "div",
                "text": plain_text(f"{text(label_key, lang)}:", i18n(label_key, suffix=":")),
            },
            {"tag": "div", "text": plain_text(value(lang))},
        ]
    return [
        {
            "tag": "div",
            "text": plain_text(
                f"{text(label_key, lang)}: {value(lang)}",
                {LARK_LOCALE[each]: f"{text(label_key, each)}: {value(each)}" for each in LANGS},
            ),
        }
    ]


def _same(value: str) -> Callable[[Lang], str]:
    return lambda _lang: value


def _localized(raw: Any) -> Callable[[Lang], str]:
    return lambda each: _value(raw, each)


def _counted(key: str, n: int, lang: Lang) -> str:
    return text(f"{key}.one" if n == 1 else key, lang, n=str(n))


def _text_block(value: Any, lang: Lang) -> list[dict[str, Any]]:
    """The message text: its size, then the text alone in a shaded block, as plain text."""
    message = str(value)

    def label(each: Lang) -> str:
        lines = _counted("text.lines", message.count("\n") + 1, each)
        return text(
            "text.block", each, lines=lines, chars=_counted("text.chars", len(message), each)
        )

    return [
        {
            "tag": "div",
            "element_id": "message_text_size",
            "text": plain_text(label(lang), {LARK_LOCALE[each]: label(each) for each in LANGS}),
        },
        # A shaded one-column set, not an interactive_container: Lark requires `behaviors`
        # on that one, and the text must not be clickable.
        {
            "tag": "column_set",
            "element_id": "message_text",
            "flex_mode": "none",
            "background_style": "grey",
            "columns": [
                {
                    "tag": "column",
                    "width": "weighted",
                    "weight": 1,
                    "padding": "8px 12px 8px 12px",
                    "elements": [{"tag": "div", "text": plain_text(message)}],
                }
            ],
        },
    ]


# terms that are not a `Label: value` line
TERM_ELEMENTS: Mapping[str, Callable[[Any, Lang], list[dict[str, Any]]]] = {"text": _text_block}


def _term(term: dict[str, Any], lang: Lang) -> list[dict[str, Any]]:
    elements = TERM_ELEMENTS.get(term["name"])
    if elements is not None:
        return elements(term["value"], lang)
    return _line(f"term.{term['name']}", _localized(term["value"]), lang)


def _verified(view: dict[str, Any], open_id: Any) -> bool:
    """An open id Lark accepts in <at>: one of the audience's operators (checked at setup)."""
    operators = view.get("audience", {}).get("operators", ())
    return isinstance(open_id, str) and bool(OPEN_ID.fullmatch(open_id)) and open_id in operators


def _requester(view: dict[str, Any], lang: Lang) -> dict[str, Any] | None:
    requester = view["source"].get("requester_open_id")
    if not isinstance(requester, str) or not requester:
        return None
    if _verified(view, requester):
        mention = f"<at id={requester}></at>"
        return {
            "tag": "markdown",
            "content": f"{text('requested_by', lang)}: {mention}",
            "i18n_content": {k: f"{v}: {mention}" for k, v in i18n("requested_by").items()},
        }
    key = "requested_by.unverified"
    return {
        "tag": "div",
        "text": plain_text(text(key, lang, who=requester), i18n(key, who=requester)),
    }


def _person(view: dict[str, Any], open_id: Any) -> str:
    """An <at> mention where Lark is known to accept the id, else the id in plain words."""
    return f"<at id={open_id}></at>" if _verified(view, open_id) else str(open_id or "?")


def _status_line(view: dict[str, Any], lang: Lang, tz: tzinfo) -> dict[str, Any] | None:
    state = view["state"]
    if state in OPEN_STATES:
        return None
    decision = view.get("decision") or {}
    by = decision.get("by")
    who = _person(view, by)
    confirmed = (view.get("approval") or {}).get("confirmed_by") or []
    if state in ("claimed", "outcome_observed") and len(confirmed) > 1:
        who = ", ".join(_person(view, each) for each in confirmed)  # a quorum: every one
    at = _when(decision["at"], tz) if decision.get("at") else _when(view["updated_at"], tz)
    if state == "expired":
        at = _when(view["expires_at"], tz)
    values = {"who": who, "at": at}
    return {
        "tag": "markdown",
        "element_id": "status",
        "content": text(f"state.{state}", lang, **values),
        "i18n_content": i18n(f"state.{state}", **values),
    }


def render_card(
    view: dict[str, Any], *, lang: Lang = "en", now: datetime, tz: tzinfo = UTC
) -> dict[str, Any]:
    """The card for one operation in its current state."""
    kind = view["kind"]
    terms = view["terms"]
    elements: list[dict[str, Any]] = []
    if view["simulated"]:
        elements.append(
            {
                "tag": "markdown",
                "element_id": "simulated",
                "content": f"**{text('simulated', lang)}**",
                "i18n_content": {k: f"**{v}**" for k, v in i18n("simulated").items()},
            }
        )
    for term in terms["terms"]:
        elements += _term(term, lang)
    elements += approval_elements(view, lang, lambda open_id: _person(view, open_id))
    elements.append({"tag": "hr"})
    executor = view["executor"]

    def expires(each: Lang) -> str:
        return f"{_when(view['expires_at'], tz)} ({_relative(view['expires_at'], now, each)})"

    elements += [
        *_line("executor", _same(f"{executor['name']} r{executor['revision']}"), lang),
        *_line("expires", expires, lang),
        *_line("operation", _same(view["id"]), lang),
        *_line("digest", _same(view["confirm_digest"][:SHORT_DIGEST]), lang),
    ]
    requester = _requester(view, lang)
    if requester is not None:
        elements.append(requester)
    status = _status_line(view, lang, tz)
    if status is not None:
        elements.append(status)
        given = (view.get("decision") or {}).get("reason")
        if given:  # the operator's words, as plain text: nothing in them can format
            elements.append(
                {
                    "tag": "div",
                    "element_id": "decision_reason",
                    "text": plain_text(
                        text("detail.reason", lang, reason=given),
                        i18n("detail.reason", reason=given),
                    ),
                }
            )
    elif view["state"] in OPEN_STATES:
        elements += _decide(view, lang)
    outcomes = view.get("outcomes", [])
    execution = (view.get("execution") or {}).get("state")
    if not outcomes and execution in EXECUTING:
        elements.append(_markdown_i18n("executing", lang))
    for outcome in newest_per_stage(outcomes):  # the original stage, then the reconciled one
        elements += outcome_lines(outcome, simulated=view["simulated"], lang=lang)
    title_key = f"title.{kind}"
    title = f"{text(title_key, lang)}: {terms.get('title', '')}"
    return {
        "schema": "2.0",
        "config": {
            "update_multi": True,
            "summary": {"content": title},
            "locales": [LARK_LOCALE[each] for each in LANGS],
        },
        "header": {
            "template": _template(view),
            "title": plain_text(
                title,
                {
                    LARK_LOCALE[each]: f"{text(title_key, each)}: {terms.get('title', '')}"
                    for each in LANGS
                },
            ),
            "subtitle": plain_text(text("subtitle.simulated", lang), i18n("subtitle.simulated"))
            if view["simulated"]
            else plain_text(kind),
        },
        "body": {"elements": elements},
    }


def _markdown_i18n(key: str, lang: Lang) -> dict[str, Any]:
    return {"tag": "markdown", "content": text(key, lang), "i18n_content": i18n(key)}


def _template(view: dict[str, Any]) -> str:
    outcome = view.get("outcome")
    if outcome is not None:
        return OUTCOME_TEMPLATE.get(outcome["status"], "grey")
    return HEADER_TEMPLATE.get(view["state"], "grey")


def _decide(view: dict[str, Any], lang: Lang) -> list[dict[str, Any]]:
    """Confirm; and Reject in a small form whose optional reason goes back to the proposer
    (Lark sends the form's fields with the click; an empty field is a reject without one)."""

    def button(action: str, style: str, label: str | None = None, **more: Any) -> dict[str, Any]:
        label = label or action
        element: dict[str, Any] = {
            "tag": "button",
            "element_id": label,
            "type": style,
            "text": plain_text(text(f"button.{label}", lang), i18n(f"button.{label}")),
            "behaviors": [{"type": "callback", "value": callback_value(view, action)}],
            **more,
        }
        dialog = confirm_dialog(view, lang) if action == "confirm" else None
        if dialog is not None:  # a second look: the key terms before the click is sent
            element["confirm"] = dialog
        return element

    reason = {
        "tag": "input",
        "element_id": REASON_FIELD,
        "name": REASON_FIELD,
        "max_length": REASON_MAX_CHARS,
        "width": "fill",
        "placeholder": plain_text(text("reject.reason", lang), i18n("reject.reason")),
    }
    return [
        {
            "tag": "column_set",
            "element_id": "decide",
            "columns": [
                {
                    "tag": "column",
                    "width": "auto",
                    "elements": [button("confirm", "primary_filled")],
                }
            ],
        },
        {
            "tag": "form",
            "element_id": "reject_form",
            "name": "reject_form",
            "elements": [
                reason,
                {
                    "tag": "column_set",
                    "columns": [
                        {
                            "tag": "column",
                            "width": "auto",
                            "elements": [
                                button("reject", "danger", name="reject", form_action_type="submit")
                            ],
                        },
                        {
                            "tag": "column",
                            "width": "auto",
                            "elements": [
                                button(
                                    "reject",
                                    "default",
                                    WITHOUT_REASON,
                                    name=WITHOUT_REASON,
                                    form_action_type="submit",
                                )
                            ],
                        },
                    ],
                },
            ],
        },
    ]
