"""The text listener's scope: who asked where -> which audiences, the neutral line, or silence."""

from __future__ import annotations

from typing import Any

import pytest

from bot.ingress.text_scope import (
    ELSEWHERE,
    SCOPE_RULES,
    Answer,
    Asker,
    AudienceScope,
    Scope,
    Verdict,
    audience_chat,
    destination_chat,
    foreign_tenant,
    operator_p2p,
    scope_of,
)

OURS, THEIRS = "tenant-ours", "tenant-theirs"
SCOPE = Scope(
    audiences=(
        AudienceScope("ops", "oc_ops", frozenset({"ou_alice", "ou_bob"})),
        AudienceScope("desk", "oc_desk", frozenset({"ou_alice"})),
        AudienceScope("night", "oc_ops", frozenset({"ou_carol"})),  # shares ops' chat
    ),
    destination_chats=frozenset({"oc_acme"}),
    tenant_keys=frozenset({OURS}),
)


def asker(
    chat_id: str = "oc_ops",
    open_id: str = "ou_bob",
    *,
    p2p: bool = False,
    tenant_key: str = OURS,
    sender_tenant_key: str = OURS,
) -> Asker:
    return Asker(chat_id, p2p, open_id, tenant_key, sender_tenant_key)


def data(*audiences: str) -> tuple[Answer, frozenset[str]]:
    return Answer.DATA, frozenset(audiences)


NEUTRAL = (Answer.NEUTRAL, frozenset[str]())
SILENT = (Answer.SILENT, frozenset[str]())


@pytest.mark.parametrize(
    ("who", "expected"),
    [
        # an audience's chat: anyone of an allowed tenant, that chat's audiences only
        (asker("oc_ops", "ou_bob"), data("ops", "night")),
        (asker("oc_ops", "ou_mallory"), data("ops", "night")),
        (asker("oc_desk", "ou_bob"), data("desk")),
        # p2p: the audiences the sender operates
        (asker("oc_p2p_alice", "ou_alice", p2p=True), data("ops", "desk")),
        (asker("oc_p2p_bob", "ou_bob", p2p=True), data("ops")),
        (asker("oc_p2p_mallory", "ou_mallory", p2p=True), NEUTRAL),
        # a group of no audience, even for an operator
        (asker("oc_random", "ou_alice"), NEUTRAL),
        # another tenant: the sender's own tenant, or the installation's
        (asker("oc_ops", "ou_eve", sender_tenant_key=THEIRS), NEUTRAL),
        (asker("oc_p2p_alice", "ou_alice", p2p=True, sender_tenant_key=THEIRS), NEUTRAL),
        (asker("oc_ops", "ou_bob", tenant_key=THEIRS), NEUTRAL),
        (asker("oc_ops", "ou_bob", sender_tenant_key=""), NEUTRAL),  # unsaid is not allowed
        # the counterparty's chat: silence, for everyone, before any other rule
        (asker("oc_acme", "ou_alice"), SILENT),
        (asker("oc_acme", "ou_eve", sender_tenant_key=THEIRS), SILENT),
    ],
)
def test_scope_of(who: Asker, expected: tuple[Answer, frozenset[str]]) -> None:
    verdict = scope_of(who, SCOPE)
    assert (verdict.answer, verdict.audiences) == expected


def test_a_chat_that_is_both_an_audience_and_a_destination_stays_silent() -> None:
    both = Scope(
        audiences=(AudienceScope("ops", "oc_acme", frozenset({"ou_alice"})),),
        destination_chats=frozenset({"oc_acme"}),
        tenant_keys=frozenset({OURS}),
    )
    assert scope_of(asker("oc_acme", "ou_alice"), both).answer is Answer.SILENT


def test_nothing_configured_shows_nothing() -> None:
    assert scope_of(asker(), Scope()) == Verdict(Answer.NEUTRAL, "a tenant that is not allowed")
    empty_tenant = Scope(tenant_keys=frozenset({""}))
    who = asker(tenant_key="", sender_tenant_key="")
    assert scope_of(who, empty_tenant).answer is Answer.NEUTRAL


def test_each_rule_decides_only_its_own_case() -> None:
    assert destination_chat(asker("oc_ops"), SCOPE) is None
    assert foreign_tenant(asker(), SCOPE) is None
    assert audience_chat(asker("oc_ops", p2p=True), SCOPE) is None  # a p2p chat is nobody's
    assert operator_p2p(asker("oc_ops", "ou_alice"), SCOPE) is None  # groups go by chat
    assert scope_of(asker(), SCOPE, rules=()) is ELSEWHERE
    assert SCOPE_RULES[0] is destination_chat  # silence comes before everything


@pytest.mark.parametrize(
    "envelope",
    [
        {},
        {"event": "junk", "header": []},
        {"event": {"message": {"chat_id": 7}, "sender": {"sender_id": None}}},
    ],
)
def test_a_malformed_envelope_is_nobody_nowhere(envelope: dict[str, Any]) -> None:
    who = Asker.from_envelope(envelope)
    assert who == Asker("", False, "", "", "")
    assert scope_of(who, SCOPE).answer is Answer.NEUTRAL


def test_the_asker_is_read_from_an_im_message_receive_envelope() -> None:
    envelope = {
        "header": {"tenant_key": OURS},
        "event": {
            "sender": {"sender_id": {"open_id": "ou_eve"}, "tenant_key": THEIRS},
            "message": {"chat_id": "oc_ops", "chat_type": "group"},
        },
    }
    assert Asker.from_envelope(envelope) == asker("oc_ops", "ou_eve", sender_tenant_key=THEIRS)
