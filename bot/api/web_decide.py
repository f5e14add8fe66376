"""Confirm and Reject on /ops/{id}: the web entry, against the same authority as the card.

POST /ops/{id}/decide takes the form the detail page rendered: the action, the confirm
digest it showed, the session's CSRF token, a one-time form key and, for a Reject, an
optional reason. Refused before anything is written (403, nothing recorded: nobody we can
name asked): an Origin (or, without one, a Referer) other than [web] public_url's, no live
session, a wrong CSRF token, a session of a tenant not in [lark] tenant_keys. Then it is a
click like a card's, decided by bot/decide (core.py): the value checks, ONE group-commit
write (inbox kind "web" keyed by the form key, so a replayed post records one decision)
conditional in SQL on state, digest, expiry, operator or approver, self-approval and the
policy, entry "web"; a refusal is named by the card's operation checks less the
chat/message ones (bot/decide/provenance.py), stored with its reason code, and shown in the
catalogue's words. The answer is POST-redirect-GET: the page, `?form=KEY`, reads what that
post did from its inbox entry (only for the same operation and person), so a reload or a
replay shows the same message and no forged link can put words on the page.

The page's decision panel (`WebDecisions.panel`) offers the buttons this person may press
and, where they may not decide (or not confirm), says why in the catalogue's words: the same
operation checks, named by the first that refuses; nobody signed in is offered a sign-in that
comes back to the page. Refusals before anything is written are error pages with the ways on
(back to the operation, sign in again, the dashboard).

A decision makes the card due at once (no callback answer carries it, unlike a card click's)
and kicks the card worker; a claim kicks the executor. A Confirm of a high-value operation
needs a recent sign-in ([web] reauth_above, reauth_within_s): without one nothing is
written and the page offers "sign in again", which comes back to it.

Posts are rate-limited per client address (first, before anything is read) and per signed-in
person (bot/api/web_limits.py): past either, a 429 page with Retry-After and nothing
written. A body that is no readable form is a 400. A person's refusals on one operation are one
row with a count (store/claims/click_sql.py), so even posts within the limit cannot grow its page.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from aiohttp import web

from bot.api.dashboard_words import label
from bot.api.errors import TO_OPS, Step, html_error, request_lang
from bot.api.form_body import UnreadableForm, form_fields
from bot.api.signin import SIGN_IN_PATH, SignIn, Viewer, sign_in_link
from bot.api.web_limits import DECISION_POSTS, WebLimits
from bot.api.web_rules import FORM_KEY, reauth_due, same_origin
from bot.config import Config
from bot.config.policy import policy_digests
from bot.decide.counters import DecisionCounters
from bot.decide.decider import INBOX_KINDS, Decider, DecideSettings, Verdict
from bot.decide.provenance import CardClick, Context, operation_refusal, web_click
from cards.render import SHORT_DIGEST
from cards.strings import COUNTED_TOAST, REFUSALS, Lang, text
from kernel.logcontext import about
from kernel.reasons import Reason
from store import (
    Counted,
    Decided,
    DelegationLedger,
    Entry,
    Operation,
    Store,
    answering_a_person,
    payload_digest,
)

log = logging.getLogger("countersign.api")

INBOX_KIND = INBOX_KINDS[Entry.WEB]
DECIDE_PATH = "/ops/{id}/decide"


class WebResult(StrEnum):
    """A post's answer's `result`, as its inbox entry keeps it: what the page it redirects to
    says. The web's own words: "claimed" and "rejected" here name what the post did, not the
    operation's state (store.State)."""

    REFUSED = "refused"
    COUNTED = "counted"
    REJECTED = "rejected"
    CLAIMED = "claimed"


@dataclass(frozen=True)
class Flash:
    """What a post did, on the page it redirected to: `tone` ok (a confirmation, green),
    neutral (a reject: done, no success) or refused (red), and the words."""

    tone: str
    text: str
    reason: str = ""  # the refusal's code (kernel/reasons.py), for people and tests alike


@dataclass(frozen=True)
class DecideForm:
    """The buttons a page offers this person, and what the form posts with them."""

    action: str
    digest: str
    digest_short: str
    csrf: str
    form_key: str
    confirm: bool
    reject: bool
    reauth: str | None  # "sign in again" link when a Confirm needs a fresher sign-in
    reauth_minutes: int


@dataclass(frozen=True)
class Panel:
    """The decision panel of /ops/{id}: the form this person may post (None: none), why they
    may not decide or not confirm (`why`, plain words; `code`: the refusal's reason code, or
    "sign_in"), and the sign-in link back here for nobody signed in."""

    form: DecideForm | None
    why: str | None = None
    code: str = ""
    sign_in: str | None = None


def counted_answer(op: Operation) -> dict[str, Any]:
    """A post's answer when its confirmation counted and the operation awaits more."""
    return {
        "result": WebResult.COUNTED.value,
        "counted": len(op.confirmed_by),
        "required": op.envelope.approval.required,
    }


def web_answer(verdict: Verdict) -> dict[str, Any]:
    """What a post did, as its inbox entry keeps it for the page it redirects to."""
    if verdict.refusal is not None:
        return {"result": WebResult.REFUSED.value, "reason": verdict.refusal.value}
    if isinstance(verdict.decided, Counted):
        return counted_answer(verdict.decided.operation)
    done = WebResult.REJECTED if isinstance(verdict.decided, Decided) else WebResult.CLAIMED
    return {"result": done.value}


def _lang(value: Any) -> Lang:
    return "zh" if value == "zh" else "en"


class WebDecisions:
    def __init__(
        self,
        config: Config,
        store: Store,
        signin: SignIn,
        counters: DecisionCounters,  # the process's, shared with the card
        *,
        on_card_due: Callable[[], None],
        on_claimed: Callable[[], None],
    ) -> None:
        settings = config.settings
        self.web = settings.web
        assert self.web.public_url is not None  # config check: required with sign_in
        self.public_url = self.web.public_url
        self.store = store
        self.signin = signin
        self.decider = Decider(
            store,
            Entry.WEB,
            DecideSettings("", frozenset(settings.lark.tenant_keys), policy_digests(settings)),
            counters,
            on_card_due=on_card_due,
            on_claimed=on_claimed,
        )
        self.inbox = self.decider.inbox
        # the store's clock: a test holds it still, so a burst is a burst however slow the machine
        self.limits = WebLimits(DECISION_POSTS, clock=lambda: store.clock().timestamp())

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/ops/{id:[0-9A-Za-z_-]{1,64}}/decide", self.decide)

    def context(self) -> Context:
        return self.decider.context()

    # -- the page's side ----------------------------------------------------------------------

    async def panel(self, op: Operation, viewer: Viewer | None, lang: Lang) -> Panel:
        """The decision panel for this page: the form this person may post (with their own
        right, or one delegated to them now) and, where they may not decide (or not
        confirm), why, in the catalogue's plain words; nobody signed in: a sign-in link
        that comes back here."""
        if viewer is None:
            back = f"/ops/{op.id}?lang={lang}"
            return Panel(None, label("panel.sign_in", lang), "sign_in", sign_in_link(back))
        if not viewer.allowed:  # the page itself is refused (403); said for completeness
            reason = Reason.TENANT_NOT_ALLOWED
            return Panel(None, REFUSALS[reason][lang], reason.value)
        ledger = DelegationLedger(self.decider.store)
        held = await ledger.to_person(op.envelope.audience.name, viewer.open_id)
        ctx = replace(self.context(), delegations=held)
        refusals = {
            action: operation_refusal(
                web_click(
                    op.id,
                    action,
                    op.confirm_digest,
                    open_id=viewer.open_id,
                    tenant_key=viewer.tenant_key,
                    form_key="-",
                ),
                op,
                ctx,
                Entry.WEB,
            )
            for action in ("confirm", "reject")
        }
        confirm, reject = refusals["confirm"] is None, refusals["reject"] is None
        why = refusals["confirm"] or refusals["reject"]
        said = REFUSALS[why][lang] if why is not None else None
        if said is not None and reject and not confirm:
            said = f"{said} {label('panel.reject_only', lang)}"
        if not (confirm or reject):
            return Panel(None, said, why.value if why else "")
        reauth = confirm and reauth_due(op, self.web, viewer.signed_in_at, ctx.now)
        form = DecideForm(
            action=DECIDE_PATH.format(id=op.id),
            digest=op.confirm_digest,
            digest_short=op.confirm_digest[:SHORT_DIGEST],
            csrf=viewer.csrf_token,
            form_key=secrets.token_urlsafe(24),  # one per rendered page: the inbox key
            confirm=confirm,
            reject=reject,
            reauth=f"{SIGN_IN_PATH}?next=/ops/{op.id}" if reauth else None,
            reauth_minutes=max(1, self.web.reauth_within_s // 60),
        )
        return Panel(form, said, why.value if why else "")

    async def flash(
        self, operation_id: str, form_key: str, viewer: Viewer | None, lang: Lang
    ) -> Flash | None:
        """What the post with this form key did, for the person who made it."""
        if viewer is None or not FORM_KEY.fullmatch(form_key):
            return None
        entry = await self.inbox.get(INBOX_KIND, form_key)
        if entry is None:
            return None
        asked = entry.payload
        if asked.get("operation_id") != operation_id or asked.get("operator") != viewer.open_id:
            return None
        answer = entry.answer
        if answer is None:  # committed, its answer not yet stored (or lost in a crash)
            return Flash("ok", text("toast.processing", lang))
        if answer.get("result") == WebResult.REFUSED:
            reason = Reason(str(answer.get("reason")))
            return Flash("refused", REFUSALS[reason][lang], reason.value)
        if answer.get("result") == WebResult.COUNTED:
            counted = COUNTED_TOAST[lang].format(
                counted=answer.get("counted"), required=answer.get("required")
            )
            return Flash("ok", counted)
        if answer.get("result") == WebResult.REJECTED:  # done, but no success: neutral
            return Flash("neutral", text("toast.rejected", lang))
        return Flash("ok", text("toast.confirmed", lang))

    # -- the post -----------------------------------------------------------------------------

    async def decide(self, request: web.Request) -> web.Response:
        operation_id = request.match_info["id"]
        if (throttled := self.limits.by_address(request)) is not None:
            return throttled
        if not self._same_origin(request):
            return self._refused(request, "decide.cross_origin")
        viewer = await self.signin.viewer(request)
        if viewer is None:
            return self._refused(request, "decide.signed_out")
        if (throttled := self.limits.by_person(request, viewer.open_id)) is not None:
            return throttled
        try:
            fields = await form_fields(request)
        except UnreadableForm as unreadable:
            said = unreadable.said(request_lang(request))
            return self._refused(request, "", status=400, why=said)
        if not hmac.compare_digest(fields.get("csrf", "").encode(), viewer.csrf_token.encode()):
            return self._refused(request, "decide.foreign_form")
        if not viewer.allowed:
            reason = Reason.TENANT_NOT_ALLOWED
            said = REFUSALS[reason][request_lang(request)]
            return self._refused(request, "", why=f"{said.rstrip('.')} ({reason.value})")
        form_key = fields.get("form_key", "")
        if not FORM_KEY.fullmatch(form_key):
            return self._refused(request, "decide.no_key", status=400)
        lang = _lang(fields.get("lang"))
        click = web_click(
            operation_id,
            fields.get("action", ""),
            fields.get("digest", ""),
            open_id=viewer.open_id,
            tenant_key=viewer.tenant_key,
            form_key=form_key,
            reason=fields.get("reason"),
        )
        back = f"/ops/{operation_id}?lang={lang}"
        ctx = self.context()
        refusal = self.decider.value_refusal(click, ctx)
        with about(operation_id), answering_a_person():
            if refusal is None and click.action == "confirm":
                op = await self.store.get(operation_id)
                if op is not None and reauth_due(op, self.web, viewer.signed_in_at, ctx.now):
                    # nothing written: the page says why and offers "sign in again"
                    log.info("web confirm needs a fresher sign-in")
                    raise web.HTTPSeeOther(back)
            await self._decide(click, refusal, ctx)
        raise web.HTTPSeeOther(f"{back}&form={form_key}")

    async def _decide(self, card: CardClick, refusal: Reason | None, ctx: Context) -> None:
        click = self.decider.stored(card)
        asked = {
            "operation_id": click.operation_id,
            "action": click.action,
            "digest": click.digest,  # a crash before the answer is recorded with it
            "operator": click.operator_open_id,
            "tenant_key": card.tenant_key,
            "entry": click.entry,
        }
        card = replace(card, evidence=payload_digest(asked))  # the post as the inbox keeps it
        verdict = await self.decider.decide(card, asked, refusal, ctx)
        if verdict is None:
            log.info("web decision replayed: its first post's answer stands")
            return
        if verdict.refusal is not None:
            log.info("web click refused: %s", verdict.refusal.value)
        # no answer carries the card (a card click's does): the decision's card is due now
        await self.decider.settle(verdict, web_answer(verdict))

    def _same_origin(self, request: web.Request) -> bool:
        return same_origin(request.headers, self.public_url)

    def _refused(
        self, request: web.Request, key: str, status: int = 403, why: str = ""
    ) -> web.Response:
        """Nothing written: a page saying why (`key`'s words, else `why`), and the ways on:
        back to the operation, sign in again (coming back to it), the dashboard."""
        log.info("refused %s %r: %d web decision", request.method, request.path, status)
        lang = request_lang(request)
        cause = label(key, lang) if key else why
        page = f"/ops/{request.match_info['id']}"
        steps = (Step("next.operation", page), Step("next.sign_in", sign_in_link(page)), TO_OPS)
        return html_error(status, label("decide.refused", lang, why=cause), lang=lang, steps=steps)
