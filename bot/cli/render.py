"""Plain-text rendering of the operation projection for the CLI, in the catalogue's words.

Every state, outcome, time and value is said as the card and the dashboard say it
(`cards/vocabulary.py`, `cards/strings.py`); ids and digests are printed exactly. People are
named by the `people` map the API adds to a view; an id without a name is shown as it is.
Times are in the display zone ([cards] timezone of the config, else this machine's: the
server's default), with the zone named, as on the card and the dashboard; numbers grouped at
their precision (kernel/display.py).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from datetime import datetime, tzinfo

from bot.api.web_words import confirmer_words
from cards.approval import why_words
from cards.outcomes import outcome_parts, outcome_title, seen_of
from cards.strings import Lang, decision_key, reason_key, text
from cards.vocabulary import (
    OPEN_STATES,
    headline,
    person,
    relative,
    state_words,
    term_label,
    term_value,
    title_of,
    when,
)
from cards.world import world_mark, world_of
from kernel.display import amount_text
from kernel.display import local_zone as local_zone
from kernel.timeutil import utc_now
from store import OperationView, State

# The CLI's own labels; what they label comes from the catalogue.
LABELS: Mapping[str, Mapping[Lang, str]] = {
    "state": {"en": "state", "zh": "状态"},
    "terms": {"en": "terms", "zh": "条款"},
    "outcome": {"en": "outcome", "zh": "结果"},
    "audience": {"en": "audience", "zh": "审批群"},
    "operators": {"en": "operators", "zh": "操作员"},
    "executor": {"en": "executor", "zh": "执行器"},
    "digest": {"en": "digest", "zh": "摘要"},
    "request": {"en": "request", "zh": "请求"},
    "id": {"en": "ID", "zh": "ID"},
    "age": {"en": "AGE", "zh": "创建"},
    "state.column": {"en": "STATE", "zh": "状态"},
    "outcome.column": {"en": "OUTCOME", "zh": "结果"},
    "kind": {"en": "KIND", "zh": "类型"},
    "what": {"en": "WHAT", "zh": "内容"},
    "none": {"en": "—", "zh": "—"},
    # where a decision was made (the projection's decision.entry)
    "entry.lark": {"en": "on the Lark card", "zh": "在飞书卡片上"},
    "entry.web": {"en": "on the web", "zh": "在网页上"},
    # what the approval policy asks (`policy_lines`)
    "approval": {"en": "approval", "zh": "审批"},
    "approval.of": {"en": "{required} of {approvers}", "zh": "{approvers} 中的 {required} 位"},
    "notional": {"en": "notional", "zh": "名义金额"},
    "confirmed_by": {"en": "confirmed by", "zh": "已确认"},
    # the commands' own sentences (bot/cli/api_commands.py)
    "proposed": {"en": "proposed", "zh": "已提交"},
    "proposed.again": {
        "en": "already proposed (same request_id)",
        "zh": "此前已提交（请求 ID 相同）",
    },
    "request_id.made": {
        "en": "request_id {made} (made from the file's content: proposing the same content "
        "again reuses it, so a retry never files it twice)",
        "zh": "请求 ID {made}（由文件内容生成：再次提交相同内容会沿用它，重试不会重复提交）",
    },
    "cancelled.now": {"en": State.CANCELLED.value, "zh": "已取消"},
    "cancelled.again": {
        "en": "already cancelled (nothing changed)",
        "zh": "此前已取消（没有改变）",
    },
    "no_operations": {"en": "(no operations)", "zh": "（没有操作）"},
    "more": {"en": "more: --cursor {cursor}", "zh": "更多：--cursor {cursor}"},
    "error": {"en": "error: {error}", "zh": "错误：{error}"},
    # what a filing superseded (the API says it in English: `supersedes_note`)
    "supersession": {
        "en": "{note}",
        "zh": "{id} 取代了同一目的地上未决的草稿 {ids}：每个目的地同时只有一份草稿待决定。"
        "旧卡片现在显示“已被更新的草稿取代”，点击会被拒绝；请在新卡片上决定。",
    },
    # `show --wait` when the time ran out first
    "not_yet": {
        "en": "not {until} after {seconds} s: the operation is {state}",
        "zh": "{seconds} 秒内未{until}：该操作{state}",
    },
    "until.final": {"en": "final", "zh": "结束"},
    "until.decided": {"en": "decided", "zh": "决定"},
    # the API's refusal to cancel, said again with the state it found
    "not_cancellable": {
        "en": "the operation is {state}; only unclaimed operations can be cancelled",
        "zh": "该操作{state}；只有尚未确认的操作才能取消",
    },
}
LABEL_WIDTH = 10


def label(key: str, lang: Lang, **values: str) -> str:
    said = LABELS[key][lang]
    return said.format(**values) if values else said


def _line(key: str, value: str, lang: Lang) -> str:
    said = label(key, lang) + ":"
    return f"  {said}{' ' * (LABEL_WIDTH - width(said))} {value}"


def operation_text(
    view: OperationView,
    *,
    now: datetime | None = None,
    lang: Lang = "en",
    tz: tzinfo | None = None,
) -> str:
    """`countersign show`: the headline first (id, what happened, its world), then who
    proposed it and why, the expiry while it is open, the decision, the terms, the outcomes,
    and the audit details."""
    now, tz = now or utc_now(), tz or local_zone()
    people = view.people
    terms = view.terms
    mark = world_mark(view, lang)
    marked = f"  {mark}" if mark else ""
    lines = [
        f"{view.id}  {headline(view, people).words(lang)}{marked}",
        f"  {title_of(view, lang)}  ({view.kind})",
        _line("state", state_words(view.state, lang), lang),
    ]
    lines += source_lines(view, people, now=now, lang=lang, tz=tz)
    if view.state in OPEN_STATES:  # once decided, or closed, the expiry is history
        at = view.expires_at
        expires = text("card.expires", lang, at=when(at, tz))
        # printed now: how long from now is true as it is read
        lines.append(
            "  " + text("relative.after", lang, at=expires, relative=relative(at, now, lang))
        )
    elif view.state is State.EXPIRED:
        lines.append("  " + text("state.expired", lang, at=when(view.expires_at, tz)))
    lines += decision_lines(view, now=now, lang=lang, tz=tz)
    lines += policy_lines(view, lang=lang, tz=tz)
    if terms.get("terms"):
        lines.append(f"  {label('terms', lang)}:")
    for term in terms.get("terms", []):
        value = term_value(term, lang).replace("\n", "\n      ")
        lines.append(f"    {term_label(term, lang)}: {value}")
    for outcome in view.outcomes:  # every stage, oldest first, as the API lists
        lines.append(_line("outcome", outcome_title(outcome, world_of(view), lang), lang))
        if parts := outcome_parts(outcome.detail, lang, seen_of(view, outcome, tz)):
            lines.append("    " + "; ".join(parts))
        if message_id := outcome.detail.get("message_id"):  # the words name it by whom, when
            lines.append("    " + text("card.footer.message", lang, message_id=str(message_id)))
    audience = view.audience
    operators = ", ".join(person(each, people) for each in audience.operators)
    lines += [
        _line(
            "audience",
            f"{audience.name} ({audience.chat_id}) · {label('operators', lang)} {operators}",
            lang,
        ),
        _line("executor", f"{view.executor.name} r{view.executor.revision}", lang),
        _line("digest", view.confirm_digest, lang),
        _line("request", f"{view.source.proposer}/{view.source.request_id}", lang),
    ]
    return "\n".join(lines)


def source_lines(
    view: OperationView, people: Mapping[str, str], *, now: datetime, lang: Lang, tz: tzinfo
) -> list[str]:
    """Who proposed it (for whom) and when, and the proposer's reason if it gave one."""
    source = view.source
    requester = source.requester_open_id
    proposed = (
        text("card.proposed.for", lang, proposer=source.proposer, who=person(requester, people))
        if requester
        else text("card.proposed", lang, proposer=source.proposer)
    )
    created = view.created_at
    lines = [f"  {proposed} · {relative(created, now, lang)} · {when(created, tz)}"]
    if source.reason:
        lines.append("  " + text("card.why", lang, reason=source.reason))
    return lines


def policy_lines(view: OperationView, *, lang: Lang = "en", tz: tzinfo | None = None) -> list[str]:
    """What the approval policy asks and who has confirmed, each with where and when
    (nothing for one from anyone); people by the view's `people` names where it has them."""
    people = view.people
    approval = view.approval
    lines = []
    if approval.required > 1 or approval.rule:
        why = f" ({why_words(approval, lang)})" if approval.rule else ""
        approvers = ", ".join(person(each, people) for each in approval.approvers)
        asks = label("approval.of", lang, required=str(approval.required), approvers=approvers)
        lines.append(f"  {label('approval', lang)}: {asks}{why}")
        if approval.notional:
            lines.append(f"  {label('notional', lang)}: {amount_text(approval.notional)}")
        if approval.confirmed_by:
            confirmed = "; ".join(confirmer_words(view, people, lang, tz or local_zone()))
            lines.append(f"  {label('confirmed_by', lang)}: {confirmed}")
    return lines


def decision_lines(
    view: OperationView,
    *,
    now: datetime | None = None,
    lang: Lang = "en",
    tz: tzinfo | None = None,
) -> list[str]:
    """The decision: who, when and where, and the reason where the operator gave one."""
    decision = view.decision
    if decision is None or not decision.by:
        return []
    now, tz = now or utc_now(), tz or local_zone()
    who = person(decision.by, people=view.people)
    key = decision_key(decision.action)
    said = text(key, lang, who=who, at=when(decision.at, tz)) if decision.at else who
    if decision.at:
        said += f" ({relative(decision.at, now, lang)})"
    entry = decision.entry
    said += ", " + LABELS.get(f"entry.{entry}", {}).get(lang, str(entry))
    lines = [f"  {said}"]
    if decision.reason:
        said = reason_key(decision.action)
        lines.append("  " + text(said, lang, reason=decision.reason))
    return lines


def width(words: str) -> int:
    """Columns a terminal gives `words`: wide (CJK) characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in words)


def operation_table(
    views: Sequence[OperationView], *, now: datetime | None = None, lang: Lang = "en"
) -> list[str]:
    """`countersign list`: one row per operation under a header, columns as wide as their
    widest cell: id, age, state and newest outcome in words, kind, title and its world."""
    now = now or utc_now()
    columns = ("id", "age", "state.column", "outcome.column", "kind", "what")
    rows = [[label(key, lang) for key in columns]]
    for view in views:
        outcome = view.outcome
        rows.append(
            [
                view.id,
                relative(view.created_at, now, lang),
                state_words(view.state, lang),
                outcome_title(outcome, None, lang) if outcome else label("none", lang),
                view.kind,
                title_of(view, lang) + (f"  {mark}" if (mark := world_mark(view, lang)) else ""),
            ]
        )
    # the last column is not padded: nothing follows it
    widths = [max(width(row[n]) for row in rows) for n in range(len(columns) - 1)]
    return [
        "  ".join(
            [cell + " " * (widths[n] - width(cell)) for n, cell in enumerate(row[:-1])] + [row[-1]]
        )
        for row in rows
    ]
