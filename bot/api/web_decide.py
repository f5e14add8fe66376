"""Confirm and Reject on /ops/{id}: the web entry, against the same authority as the card.

POST /ops/{id}/decide takes the form the detail page rendered: the action, the confirm
digest it showed, the session's CSRF token, a one-time form key and, for a Reject, an
optional reason. Refused before anything is written (403, nothing recorded: nobody we can
name asked): an Origin (or, without one, a Referer) other than [web] public_url's, no live
session, a wrong CSRF token, a session of a tenant not in [lark] tenant_keys. Then it is a
click like a card's (bot/ingress/decision.py): the value checks, ONE group-commit write
(store/clicks.py, inbox kind "web" keyed by the form key, so a replayed post records one
decision) conditional in SQL on state, digest, expiry, operator or approver, self-approval
and the policy, entry "web"; a refusal is named by the card's operation checks less the
chat/message ones (bot/api/web_rules.py), stored with its reason code, and shown in the
catalogue's words. The answer is POST-redirect-GET: the page, `?form=KEY`, reads what that
post did from its inbox entry (only for the same operation and person), so a reload or a
replay shows the same message and no forged link can put words on the page.

A decision makes the card due at once (no callback answer carries it, unlike a card click's)
and kicks the card worker; a claim kicks the executor. A Confirm of a high-value operation
needs a recent sign-in ([web] reauth_above, reauth_within_s): without one nothing is
written and the page offers "sign in again", which comes back to it.

Posts are rate-limited per client address (first, before anything is read) and per signed-in
person (bot/api/web_limits.py): past either, a 429 page with Retry-After and nothing
written. A body that is no readable form is a 400. A person's refusals on one operation are one
row with a count (store/click_sql.py), so even posts within the limit cannot grow its page.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from aiohttp import web

from bot.api.errors import html_error
from bot.api.form_body import UnreadableForm, form_fields
from bot.api.signin import SIGN_IN_PATH, SignIn, Viewer
from bot.api.web_limits import DECISION_POSTS, WebLimits
from bot.api.web_rules import (
    FORM_KEY,
    may_decide,
    reauth_due,
    same_origin,
    store_click,
    value_refusal,
    web_click,
    why_refused,
)
from bot.config import Config
from bot.ingress.provenance import CardClick, Context
from bot.policy import policy_digests
from cards.render import SHORT_DIGEST
from cards.strings import COUNTED_TOAST, REFUSALS, Lang, text
from store.authority import Store
from store.canonical import canonical_json
from store.cards import CardLedger
from store.clicks import ClickWrites
from store.decisions import Claimed, Counted, Decided
from store.groupcommit import answering_a_person
from store.inbox import Inbox
from store.lifecycle import State
from store.logcontext import about
from store.reasons import Reason
from store.records import Operation

log = logging.getLogger("countersign.api")

INBOX_KIND = "web"
DECIDE_PATH = "/ops/{id}/decide"


@dataclass(frozen=True)
class Flash:
    """What a post did, on the page it redirected to: `tone` ok or refused, and the words."""

    tone: str
    text: str
    reason: str = ""  # the refusal's code (store/reasons.py), for people and tests alike


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


def counted_answer(op: Operation) -> dict[str, Any]:
    """A post's answer when its confirmation counted and the operation awaits more."""
    return {
        "result": "counted",
        "counted": len(op.confirmed_by),
        "required": op.envelope.approval.required,
    }


def _lang(value: Any) -> Lang:
    return "zh" if value == "zh" else "en"


class WebDecisions:
    def __init__(
        self,
        config: Config,
        store: Store,
        signin: SignIn,
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
        self.tenant_keys = frozenset(settings.lark.tenant_keys)
        self.policies = policy_digests(settings)
        self.clicks = ClickWrites(store, INBOX_KIND, canonical_json(self.policies))
        self.inbox = Inbox(store)
        self.cards = CardLedger(store)
        self.on_card_due = on_card_due
        self.on_claimed = on_claimed
        self.limits = WebLimits(DECISION_POSTS)

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/ops/{id:[0-9A-Za-z_-]{1,64}}/decide", self.decide)

    def context(self) -> Context:
        return Context("", self.tenant_keys, self.store.clock(), self.policies)

    # -- the page's side ----------------------------------------------------------------------

    def form(self, op: Operation, viewer: Viewer | None) -> DecideForm | None:
        """The form for this page, or None: nobody signed in, or nothing this person may do."""
        if viewer is None or not viewer.allowed or op.state is not State.AWAITING_CONFIRMATION:
            return None
        ctx = self.context()
        may = may_decide(op, viewer.open_id, viewer.tenant_key, ctx)
        if not any(may.values()):
            return None
        reauth = may["confirm"] and reauth_due(op, self.web, viewer.signed_in_at, ctx.now)
        return DecideForm(
            action=DECIDE_PATH.format(id=op.id),
            digest=op.confirm_digest,
            digest_short=op.confirm_digest[:SHORT_DIGEST],
            csrf=viewer.csrf_token,
            form_key=secrets.token_urlsafe(24),  # one per rendered page: the inbox key
            confirm=may["confirm"],
            reject=may["reject"],
            reauth=f"{SIGN_IN_PATH}?next=/ops/{op.id}" if reauth else None,
            reauth_minutes=max(1, self.web.reauth_within_s // 60),
        )

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
        if answer.get("result") == "refused":
            reason = Reason(str(answer.get("reason")))
            return Flash("refused", REFUSALS[reason][lang], reason.value)
        if answer.get("result") == "counted":
            counted = COUNTED_TOAST[lang].format(
                counted=answer.get("counted"), required=answer.get("required")
            )
            return Flash("ok", counted)
        key = "toast.rejected" if answer.get("result") == "rejected" else "toast.confirmed"
        return Flash("ok", text(key, lang))

    # -- the post -----------------------------------------------------------------------------

    async def decide(self, request: web.Request) -> web.Response:
        operation_id = request.match_info["id"]
        if (throttled := self.limits.by_address(request)) is not None:
            return throttled
        if not self._same_origin(request):
            return self._refused(request, "this form was not posted from this dashboard")
        viewer = await self.signin.viewer(request)
        if viewer is None:
            return self._refused(request, "sign in with Lark to decide (the session has ended)")
        if (throttled := self.limits.by_person(request, viewer.open_id)) is not None:
            return throttled
        try:
            fields = await form_fields(request)
        except UnreadableForm as unreadable:
            return self._refused(request, str(unreadable), status=400)
        if not hmac.compare_digest(fields.get("csrf", "").encode(), viewer.csrf_token.encode()):
            return self._refused(request, "this form is not from this session; reload the page")
        if not viewer.allowed:
            reason = Reason.TENANT_NOT_ALLOWED
            return self._refused(request, f"{REFUSALS[reason]['en']} ({reason.value})")
        form_key = fields.get("form_key", "")
        if not FORM_KEY.fullmatch(form_key):
            return self._refused(request, "this form has no key; reload the page", status=400)
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
        refusal = value_refusal(click, ctx)
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
        click = store_click(card)
        asked = {
            "operation_id": click.operation_id,
            "action": click.action,
            "digest": click.digest,  # a crash before the answer is recorded with it
            "operator": click.operator_open_id,
            "tenant_key": card.tenant_key,
            "entry": click.entry,
        }
        queued = self.clicks.enqueue(card.event_id, asked, click if refusal is None else None)
        first = await self.clicks.outcome(queued)
        if not first.received.first:
            log.info("web decision replayed: its first post's answer stands")
            return
        decided = first.decided
        if first.already_confirmed:
            refusal = Reason.ALREADY_CONFIRMED
        if refusal is None and decided is None:
            op = await self.store.get(click.operation_id)
            # read now: decided or expired since the write is named as such
            refusal = why_refused(card, op, replace(ctx, now=self.store.clock()))
        answer: dict[str, Any]
        if refusal is not None:
            log.info("web click refused: %s", refusal.value)
            answer = {"result": "refused", "reason": refusal.value}
        elif isinstance(decided, Counted):
            answer = counted_answer(decided.operation)
        else:
            answer = {"result": "rejected" if isinstance(decided, Decided) else "claimed"}
        refused = self.store.refusal_statements(click, refusal) if refusal else ()
        try:
            await self.inbox.answered(INBOX_KIND, card.event_id, answer, None, refused)
        finally:
            if decided is not None:
                if isinstance(decided, Claimed):
                    self.on_claimed()
                # no answer carried this card (a card click's does): patch it now
                await self.cards.due_now(decided.operation)
                self.on_card_due()

    def _same_origin(self, request: web.Request) -> bool:
        return same_origin(request.headers, self.public_url)

    def _refused(self, request: web.Request, message: str, status: int = 403) -> web.Response:
        log.info("refused %s %r: %d web decision", request.method, request.path, status)
        return html_error(status, f"Not decided: {message}. Nothing was recorded.")
