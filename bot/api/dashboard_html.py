"""The dashboard's pages as HTML, from the projection and the operation's records. Pure:
`bot/api/dashboard.py` reads what they show and answers the requests."""

from __future__ import annotations

from html import escape
from typing import Any

from bot.render import policy_lines
from cards.conclusion import outcome_parts
from cards.outcomes import newest_per_stage, outcome_title
from cards.strings import Lang
from store.lifecycle import State

WORDS: dict[str, dict[str, str]] = {
    "title": {"en": "countersign operations", "zh": "countersign 操作"},
    "all": {"en": "all", "zh": "全部"},
    "state": {"en": "State", "zh": "状态"},
    "kind": {"en": "Kind", "zh": "类型"},
    "terms": {"en": "Terms", "zh": "条款"},
    "outcome": {"en": "Outcome", "zh": "结果"},
    "created": {"en": "Created", "zh": "创建时间"},
    "digest": {"en": "Confirm digest", "zh": "确认摘要"},
    "audience": {"en": "Audience", "zh": "审批群"},
    "decisions": {"en": "Clicks (confirmations and refusals)", "zh": "点击（确认与拒绝）"},
    "attempt": {"en": "Attempt", "zh": "提交"},
    "outcomes": {"en": "Outcomes (original and reconciled)", "zh": "结果（原始与核对）"},
    "card": {"en": "Card deliveries", "zh": "卡片投递"},
    "deliveries": {"en": "Result deliveries", "zh": "结果回传"},
    "none": {"en": "none", "zh": "无"},
    "next": {"en": "older", "zh": "更早"},
    "simulated": {"en": "SIMULATED", "zh": "模拟"},
    "back": {"en": "all operations", "zh": "全部操作"},
    "accepted": {"en": "accepted", "zh": "已接受"},
    "refused": {"en": "refused", "zh": "已拒绝"},
    "approval": {"en": "Approval", "zh": "审批"},
    "decision": {"en": "Decision", "zh": "决定"},
    "reason": {"en": "Reason", "zh": "原因"},
}

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1f2329;background:#f5f6f7}
header{background:#1f2329;color:#fff;padding:10px 16px;display:flex;gap:12px;flex-wrap:wrap}
header a{color:#fff}main{padding:12px 16px;max-width:1100px;margin:auto}
table{border-collapse:collapse;width:100%;background:#fff}td,th{padding:6px 8px;
border-bottom:1px solid #e5e6eb;text-align:left;vertical-align:top;overflow-wrap:anywhere}
.sim{background:#ffe58f;color:#5c3c00;border-radius:4px;padding:0 6px;font-size:12px}
.state{font-weight:600}.filters a{margin-right:8px}section{background:#fff;margin:12px 0;
padding:8px 12px;border-radius:6px}h2{font-size:16px;margin:6px 0}code{font-size:12px}
@media (max-width:640px){.wide{display:none}td,th{padding:4px}body{font-size:14px}}
"""

SCRIPT = """
(async () => {
  const since = document.body.dataset.since;
  for (;;) {
    try {
      const r = await fetch('/ops/changes?since=' + encodeURIComponent(since));
      const b = await r.json();
      if (b.changed) { location.reload(); return; }
    } catch (e) { await new Promise(ok => setTimeout(ok, 5000)); }
  }
})();
"""


def word(key: str, lang: str) -> str:
    return WORDS[key].get(lang, WORDS[key]["en"])


def outcome_text(view: dict[str, Any], lang: str = "en") -> str:
    """The outcome in the card's own words: newest per stage, SIMULATED marked."""
    lines = []
    chosen: Lang = "zh" if lang == "zh" else "en"
    for outcome in newest_per_stage(view.get("outcomes", [])):
        title = outcome_title(outcome, view["simulated"], chosen)
        details = "; ".join(outcome_parts(outcome.get("detail") or {}))
        lines.append(title + (f" ({details})" if details else ""))
    return " → ".join(lines)


def _page(title: str, body: str, lang: str, since: str) -> str:
    return (
        f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>"
        f'<body data-since="{escape(since)}"><header><strong>countersign</strong>'
        f'<a href="/ops?lang={lang}">{word("back", lang)}</a>'
        f'<a href="?lang={"en" if lang == "zh" else "zh"}">{"English" if lang == "zh" else "中文"}</a>'
        f"</header><main>{body}</main><script>{SCRIPT}</script></body></html>"
    )


def _sim(view: dict[str, Any], lang: str) -> str:
    return f' <span class="sim">{word("simulated", lang)}</span>' if view["simulated"] else ""


def list_html(
    items: list[dict[str, Any]], state: str | None, cursor: str | None, lang: str, since: str
) -> str:
    filters = " ".join(
        f'<a href="/ops?lang={lang}{"&state=" + s if s else ""}">'
        f"{'<b>' if s == (state or '') else ''}{escape(s or word('all', lang))}"
        f"{'</b>' if s == (state or '') else ''}</a>"
        for s in ["", *[each.value for each in State]]
    )
    rows = "".join(
        f'<tr data-op="{escape(v["id"])}"><td><a href="/ops/{escape(v["id"])}?lang={lang}">'
        f'{escape(v["id"])}</a></td><td class="wide">{escape(v["kind"])}</td>'
        f"<td>{escape(str(v['terms'].get('title', '')))}{_sim(v, lang)}</td>"
        f'<td class="state">{escape(v["state"])}</td><td>{escape(outcome_text(v, lang))}</td>'
        f'<td class="wide">{escape(v["created_at"])}</td></tr>'
        for v in items
    )
    more = (
        f'<p><a href="/ops?lang={lang}&cursor={escape(cursor)}'
        f'{"&state=" + escape(state) if state else ""}">{word("next", lang)} →</a></p>'
        if cursor
        else ""
    )
    table = (
        f"<table><tr><th>id</th><th class=wide>{word('kind', lang)}</th>"
        f"<th>{word('terms', lang)}</th><th>{word('state', lang)}</th>"
        f"<th>{word('outcome', lang)}</th><th class=wide>{word('created', lang)}</th></tr>"
        f"{rows}</table>"
    )
    body = f'<h1>{word("title", lang)}</h1><p class="filters">{filters}</p>{table}{more}'
    return _page(word("title", lang), body, lang, since)


def _term_value(value: object) -> str:
    """A term as the card shows it: a list (mentions) as comma-separated items."""
    if isinstance(value, list):
        return ", ".join(str(each) for each in value)
    return str(value)


def _rows(cells: list[list[str]], lang: str) -> str:
    if not cells:
        return f"<p>{word('none', lang)}</p>"
    return (
        "<table>"
        + "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in cells)
        + "</table>"
    )


def detail_html(view: dict[str, Any], records: dict[str, Any], lang: str, since: str) -> str:
    terms = _rows(
        [[t["name"], _term_value(t["value"])] for t in view["terms"].get("terms", [])], lang
    )
    audience = view["audience"]
    clicks = _rows(
        [
            [
                str(c.at),
                c.action,
                c.operator_open_id,
                word("accepted", lang)
                if c.accepted
                else f"{word('refused', lang)}: {c.reason_code}",
            ]
            for c in records["confirmations"]
        ],
        lang,
    )
    attempt = records["attempt"]
    # where the attempt stands is the operation's execution state (the attempt keeps no copy)
    execution = (view.get("execution") or {}).get("state") or ""
    attempt_html = _rows(
        [
            [
                attempt.client_id,
                execution,
                str(attempt.dispatched_at or ""),
                attempt.last_error or "",
            ]
        ]
        if attempt
        else [],
        lang,
    )
    outcomes = _rows(
        [
            [
                o["stage"],
                o["status"],
                "; ".join(outcome_parts(o.get("detail") or {})),
                o["outcome_digest"][:12],
            ]
            for o in view["outcomes"]
        ],
        lang,
    )
    cards = _rows(
        [
            [str(d.at), d.action, f"v{d.version}", "ok" if d.ok else f"failed {d.code}: {d.detail}"]
            for d in records["card"]
        ],
        lang,
    )
    deliveries = _rows(
        [
            [d.id, d.channel, d.stage, d.state, str(d.attempts), d.result or d.last_error or ""]
            for d in records["deliveries"]
        ],
        lang,
    )
    body = (
        f'<h1 data-op="{escape(view["id"])}">{escape(str(view["terms"].get("title", "")))}{_sim(view, lang)}</h1>'
        f'<p>{word("state", lang)}: <span class="state" id="state">{escape(view["state"])}</span>'
        f' · {word("outcome", lang)}: <span id="outcome">{escape(outcome_text(view, lang))}</span></p>'
        f"<p><code>{escape(view['id'])}</code> · {escape(view['kind'])} · "
        f"{escape(view['executor']['name'])} r{escape(view['executor']['revision'])}</p>"
        f"<p>{word('digest', lang)}: <code>{escape(view['confirm_digest'])}</code></p>"
        f"<p>{word('audience', lang)}: {escape(audience['name'])} ({escape(audience['chat_id'])}) · "
        f"{escape(', '.join(audience['operators']))}</p>"
        f"{_approval_html(view, lang)}"
        f"<section><h2>{word('terms', lang)}</h2>{terms}</section>"
        f"<section><h2>{word('decisions', lang)}</h2>{clicks}</section>"
        f"<section><h2>{word('attempt', lang)}</h2>{attempt_html}</section>"
        f"<section><h2>{word('outcomes', lang)}</h2>{outcomes}</section>"
        f"<section><h2>{word('card', lang)}</h2>{cards}</section>"
        f"<section><h2>{word('deliveries', lang)}</h2>{deliveries}</section>"
    )
    return _page(str(view["terms"].get("title", view["id"])), body, lang, since)


def _approval_html(view: dict[str, Any], lang: str) -> str:
    """What the approval policy asks, who confirmed, and the decision with its reason."""
    parts = [f'<p class="approval">{escape(line.strip())}</p>' for line in policy_lines(view)]
    decision = view.get("decision") or {}
    if decision.get("by"):
        parts.append(
            f'<p>{word("decision", lang)}: <span id="decision">{escape(decision["action"])} · '
            f"{escape(str(decision['by']))} · {escape(str(decision['at']))}</span></p>"
        )
        if decision.get("reason"):
            parts.append(
                f'<p>{word("reason", lang)}: <span id="decision-reason">'
                f"{escape(decision['reason'])}</span></p>"
            )
    if not parts:
        return ""
    return f"<section><h2>{word('approval', lang)}</h2>{''.join(parts)}</section>"
