"""Delegation on the dashboard (`/ops/delegations`), signed in with Lark: an operator hands
their right in an audience that allows it to another person for some days, and ends it; the
person it was handed to may give it back. The page lists what is in force. Every post is
checked like a decision's (same origin, the session's CSRF token, an allowed tenant) and
against the config (bot/config/delegation.py); each grant and revocation is an audit entry,
its actor the signed-in person (store/delegation/ledger.py)."""

from __future__ import annotations

import hmac
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from aiohttp import web

from bot.api.dashboard_words import label
from bot.api.errors import html_error, request_lang
from bot.api.form_body import UnreadableForm, form_fields
from bot.api.signin import SignIn, Viewer
from bot.api.web_limits import DECISION_POSTS, WebLimits
from bot.api.web_rules import same_origin
from bot.config import Config, Settings
from bot.config.delegation import grant_problems
from cards.strings import Lang
from store import Delegation, DelegationLedger, Store

log = logging.getLogger("countersign.api")

DELEGATIONS_PATH = "/ops/delegations"


@dataclass(frozen=True)
class GrantChoice:
    """An audience the viewer may hand their right in, and for how long at most."""

    audience: str
    max_days: int


def grant_choices(settings: Settings, open_id: str) -> list[GrantChoice]:
    return [
        GrantChoice(a.name, a.delegation_max_days)
        for a in settings.audiences
        if a.delegation_max_days is not None and open_id in a.operators
    ]


def may_end(delegation: Delegation, open_id: str) -> bool:
    """Its holder ends it, or the person it was handed to gives it back."""
    return open_id in (delegation.delegator, delegation.delegate)


class WebDelegations:
    def __init__(self, config: Config, store: Store, signin: SignIn) -> None:
        self.settings = config.settings
        public_url = self.settings.web.public_url
        assert public_url is not None  # config check: required with sign_in
        self.public_url = public_url
        self.store = store
        self.signin = signin
        self.ledger = DelegationLedger(store)
        self.limits = WebLimits(DECISION_POSTS, clock=lambda: store.clock().timestamp())

    def routes(self, app: web.Application) -> None:
        app.router.add_post(DELEGATIONS_PATH, self.post)

    async def in_force(self) -> list[Delegation]:
        return await self.ledger.listed()

    async def post(self, request: web.Request) -> web.Response:
        if (throttled := self.limits.by_address(request)) is not None:
            return throttled
        lang = request_lang(request)
        if not same_origin(request.headers, self.public_url):
            return _refused(label("decide.cross_origin", lang), lang)
        viewer = await self.signin.viewer(request)
        if viewer is None:
            return _refused(label("delegate.signed_out", lang), lang)
        if (throttled := self.limits.by_person(request, viewer.open_id)) is not None:
            return throttled
        try:
            fields = await form_fields(request)
        except UnreadableForm as unreadable:
            return _refused(unreadable.said(lang), lang, status=400)
        # the page's language, as its form says it
        lang = "zh" if fields.get("lang") == "zh" else lang
        if not hmac.compare_digest(fields.get("csrf", "").encode(), viewer.csrf_token.encode()):
            return _refused(label("decide.foreign_form", lang), lang)
        if not viewer.allowed:
            return _refused(label("delegate.tenant", lang), lang)
        action = fields.get("action", "")
        if action == "grant":
            refusal = await self._grant(viewer, fields, lang)
        elif action == "revoke":
            refusal = await self._revoke(viewer, fields.get("id", ""), lang)
        else:
            refusal = label("delegate.action", lang)
        if refusal is not None:
            return _refused(refusal, lang, status=400)
        raise web.HTTPSeeOther(f"{DELEGATIONS_PATH}?lang={lang}&changed={action}")

    async def _grant(self, viewer: Viewer, fields: Mapping[str, str], lang: Lang) -> str | None:
        audience, to = fields.get("audience", ""), fields.get("to", "").strip()
        days = fields.get("days", "")
        if not days.isdigit() or len(days) > 3:
            return label("delegate.days", lang)
        now = self.store.clock()
        ends = now + timedelta(days=int(days))
        problems = grant_problems(
            self.settings, audience, viewer.open_id, to, ends, now, by=viewer.open_id, lang=lang
        )
        if problems:
            return "; ".join(f"{p.field}: {p.reason} ({p.fix})" for p in problems)
        await self.ledger.grant(
            audience, viewer.open_id, to, ends_at=ends, by=f"operator:{viewer.open_id}"
        )
        log.info("delegation granted on the web in %s", audience)
        return None

    async def _revoke(self, viewer: Viewer, delegation_id: str, lang: Lang) -> str | None:
        found = await self.ledger.find(delegation_id)
        if found is None or not may_end(found, viewer.open_id):
            return label("delegate.not_yours", lang)
        if await self.ledger.revoke(delegation_id, f"operator:{viewer.open_id}") is None:
            return label("delegate.ended", lang)
        return None


def _refused(message: str, lang: Lang, status: int = 403) -> web.Response:
    log.info("refused a delegation post: %d", status)
    return html_error(status, label("delegate.refused", lang, why=message), lang=lang)
