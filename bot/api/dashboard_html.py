"""The dashboard's pages as HTML: Jinja2 templates (bot/api/templates/dashboard/, package
data) filled from `bot/api/dashboard_view.py`'s page models. Pure: `bot/api/dashboard.py`
reads what they show and answers the requests.

Autoescape is always on: every value reaches the page escaped, whatever a proposer or an
operator typed. No build step and no client framework: one stylesheet and the long poll's
few lines of script are inlined into each page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from functools import partial
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined

from bot.api.dashboard_policy import history_rows
from bot.api.dashboard_view import detail, row
from bot.api.dashboard_words import LABELS, Now, label, moment, tone_class
from bot.api.signin import SIGN_OUT_PATH, Viewer, sign_in_link
from bot.api.web_decide import DecideForm, Flash, Panel
from bot.api.web_words import confirmer_words
from cards.strings import LANGS, Lang, text
from cards.vocabulary import BAD, DONE, OPEN_STATES, WAITING, WARN, state_words
from kernel.timeutil import iso_utc, utc_now
from store import AWAITING, SEARCH_MAX_CHARS, UNKNOWN, OperationView, PolicyVersion, State
from workers.domains import DOMAINS
from workers.domains.execution import CORE_OUTCOMES

ENV = Environment(
    loader=PackageLoader("bot.api", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
# how each "Needs attention" group reads at a glance (the card's tones)
GROUP_TONE = {AWAITING: WAITING, UNKNOWN: WARN}


def outcome_choices() -> dict[str, dict[str, str]]:
    """Every status the executor or a registered domain reports, with its words, for the
    outcome filter (read at each request: a domain registered later is in it). A status two
    kinds word differently reads as itself."""
    found: dict[str, dict[str, str]] = {}
    for outcomes in (CORE_OUTCOMES, *(plugin.outcomes for plugin in DOMAINS.values())):
        for status, meaning in outcomes.items():
            said = meaning.words.as_json()
            if found.setdefault(status, said) != said:  # the dashboard's word for it, if any
                key = f"outcome.status.{status}"
                words = status.replace("_", " ")
                found[status] = {
                    each: label(key, each) if key in LABELS else words for each in LANGS
                }
    return found


@dataclass(frozen=True)
class Who:
    """The signed-in person a page is for (None: nobody), and whether sign-in is offered."""

    viewer: Viewer | None = None
    sign_in: bool = False


@dataclass(frozen=True)
class Chrome:
    """What every page needs besides its content: language, the long poll's mark, where the
    page is (to switch language in place) and whether it counts down to an expiry."""

    lang: Lang
    since: str
    path: str = "/ops"
    query: Mapping[str, str] = field(default_factory=dict)
    ticking: bool = False
    who: Who = field(default_factory=Who)


def href(lang: Lang, path: str, **params: str | None) -> str:
    kept = {"lang": lang, **{name: value for name, value in params.items() if value}}
    return f"{path}?{urlencode(kept)}"


def _render(template: str, chrome: Chrome, title: str, nav: str, **context: Any) -> str:
    lang = chrome.lang
    other: Lang = "en" if lang == "zh" else "zh"
    return ENV.get_template(f"dashboard/{template}").render(
        lang=lang,
        since=chrome.since,
        ticking=chrome.ticking,
        title=title,
        nav=nav,
        viewer=chrome.who.viewer,
        # "Sign in with Lark" comes back to this page (bot/api/signin.py)
        sign_in=sign_in_link(chrome.path + ("?lang=zh" if lang == "zh" else ""))
        if chrome.who.sign_in
        else None,
        sign_out=SIGN_OUT_PATH,
        switch=href(other, chrome.path, **chrome.query),
        href=partial(href, lang),
        label=partial(label, lang=lang),
        cat=partial(text, lang=lang),
        **context,
    )


def attention_html(
    groups: Sequence[tuple[str, int, Sequence[OperationView]]],
    recent: Sequence[OperationView],
    chrome: Chrome,
    people: Mapping[str, str],
    at: datetime,
    tz: tzinfo = UTC,
) -> str:
    """Counts per group at the top, each group's operations, then recent activity (times in
    the display zone `tz`)."""
    lang = chrome.lang
    now = Now(at, tz, chrome.ticking)
    shown = []
    for key, count, views in groups:
        column = "expires" if key == AWAITING else "updated"
        shown.append(
            {
                "key": key,
                "count": count,
                "title": text(f"attention.{key}", lang),
                "cls": tone_class(GROUP_TONE.get(key, BAD) if count else DONE),
                "rows": [row(view, people, now, lang, column, note=False) for view in views],
                "time_label": text("expires", lang)
                if key == AWAITING
                else label("col.updated", lang),
            }
        )
    return _render(
        "attention.html",
        chrome,
        label("nav.attention", lang),
        "attention",
        groups=shown,
        total=sum(count for _key, count, _views in groups),
        recent=[row(view, people, now, lang, "updated") for view in recent],
    )


def list_html(
    views: Sequence[OperationView],
    filters: Mapping[str, str],
    cursor: str | None,
    chrome: Chrome,
    people: Mapping[str, str],
    at: datetime,
    searched_to: datetime | None = None,
    tz: tzinfo = UTC,
) -> str:
    """All operations, newest first: search, state and outcome filters, paging. A filtered
    page that stopped at its window (`searched_to`) says how far back it looked."""
    lang = chrome.lang
    now = Now(at, tz, chrome.ticking)
    state, outcome, q = filters.get("state", ""), filters.get("outcome", ""), filters.get("q", "")
    return _render(
        "list.html",
        chrome,
        label("nav.all", lang),
        "all",
        rows=[row(view, people, now, lang, "created") for view in views],
        q=q,
        q_max=SEARCH_MAX_CHARS,
        states=[
            {"value": each.value, "text": state_words(each.value, lang), "selected": each == state}
            for each in State
        ],
        outcomes=[
            {"value": each, "text": words[lang], "selected": each == outcome}
            for each, words in outcome_choices().items()
        ],
        filtered=bool(state or outcome or q),
        older=href(lang, "/ops/all", cursor=cursor, **filters) if cursor else None,
        searched_to=moment(iso_utc(searched_to), now, lang) if searched_to else None,
    )


def detail_html(
    view: OperationView,
    records: Mapping[str, Any],
    lang: Lang | str,
    since: str,
    *,
    people: Mapping[str, str] | None = None,
    now: datetime | None = None,
    who: Who | None = None,
    decide: DecideForm | None = None,
    flash: Flash | None = None,
    panel: Panel | None = None,
    tz: tzinfo = UTC,
) -> str:
    """One operation: its state in words, who proposed it and why, the expiry until decided,
    the decision; then terms, outcomes, clicks, the attempt and deliveries as tables. For a
    signed-in operator, Confirm and Reject (`decide`) and what their last post did (`flash`)."""
    chosen: Lang = "zh" if lang == "zh" else "en"
    # an open operation's page reloads each minute (live.js): its times may say how long
    ticking = view.state in OPEN_STATES
    page = detail(view, records, people or {}, Now(now or utc_now(), tz, ticking), chosen)
    chrome = Chrome(
        chosen,
        since,
        f"/ops/{view.id}",
        ticking=ticking,
        who=who or Who(),
    )
    return _render(
        "detail.html",
        chrome,
        page["title"],
        "detail",
        d=page,
        decide=decide,
        flash=flash,
        # the decision panel's why-not and sign-in, and who confirmed where (bot/api/web_words.py)
        panel=panel,
        confirmers=confirmer_words(view, people or {}, chosen, tz),
        required=view.approval.required,
    )


def policy_html(
    versions: Sequence[PolicyVersion], chrome: Chrome, now: datetime, tz: tzinfo = UTC
) -> str:
    """The policy's versions, newest first, each with what changed."""
    lang = chrome.lang
    rows = history_rows(versions, Now(now, tz, chrome.ticking), lang)
    return _render("policy.html", chrome, label("policy.title", lang), "policy", versions=rows)


def delegations_html(
    rows: list[dict[str, Any]],
    grant: dict[str, Any] | None,
    chrome: Chrome,
    done: str | None,
) -> str:
    """Delegations in force, an End button for those the viewer may end, the grant form."""
    lang = chrome.lang
    viewer = chrome.who.viewer
    return _render(
        "delegations.html",
        chrome,
        label("delegations.title", lang),
        "delegations",
        rows=rows,
        grant=grant,
        csrf=viewer.csrf_token if viewer is not None else None,
        done=done if done in ("grant", "revoke") else None,
    )


def not_found_html(message: str, chrome: Chrome) -> str:
    return _render("not_found.html", chrome, label("not_found", chrome.lang), "", message=message)


def refused_html(chrome: Chrome) -> str:
    """403 for someone the dashboard does not answer: signed in from a tenant not allowed
    (with the sign-out button), or not signed in (with the sign-in link when offered)."""
    return _render("refused.html", chrome, label("refused", chrome.lang), "")
