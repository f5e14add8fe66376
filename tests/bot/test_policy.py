"""The approval policy read off the config (bot/config/policy.py): which rule applies to an
operation, what it then needs and from whom, and the digest that makes a changed policy's
cards stale. Pure: settings in, an `Approval` out, no store."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from bot.config import Settings, parse
from bot.config.policy import amount_words, approval_for, policy_digest, policy_digests
from store import Approval
from workers.domains.base import Amount

ORDER = "finance.order"
MESSAGE = "message.send"
OPS = {"name": "ops", "chat_id": "oc_ops", "operators": ["ou_carol", "ou_alice", "ou_bob"]}
DESK = {"name": "desk", "chat_id": "oc_desk", "operators": ["ou_dave", "ou_erin"]}
EVERYONE = ("ou_alice", "ou_bob", "ou_carol")


def settings(rules: list[dict[str, Any]] | None = None, **ops: Any) -> Settings:
    return parse({"audiences": [{**OPS, **ops}, DESK], "approval_rules": rules or []})


def rule(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields}


def by_amount(name: str, above: str, required: int = 2, **fields: Any) -> dict[str, Any]:
    return rule(name, above=above, currency="USDC", required_confirmations=required, **fields)


def usdc(value: str) -> Amount:
    return Amount(Decimal(value), "USDC")


def approval(
    config: Settings, notional: Amount | None, kind: str = ORDER, audience: str = "ops"
) -> Approval:
    found = config.audience(audience)
    assert found is not None
    return approval_for(config, found, kind, notional)


# -- no rule ------------------------------------------------------------------------------------


def test_without_rules_the_audience_decides_who_and_how_many() -> None:
    config = settings(required_confirmations=2)
    found = approval(config, usdc("60000"))
    assert found.required == 2
    assert found.approvers == EVERYONE  # every operator of the audience, sorted
    assert (found.rule, found.threshold, found.why) == (None, None, None)
    assert found.notional == "60000.00 USDC"
    ops = config.audience("ops")
    assert ops is not None
    assert found.policy == policy_digest(config, ops)


def test_the_default_is_one_confirmation_from_any_operator() -> None:
    found = approval(settings(), None, kind=MESSAGE)
    assert (found.required, found.approvers, found.rule, found.notional) == (
        1,
        EVERYONE,
        None,
        None,
    )


# -- rules by amount ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "applies"),
    [("50000.01", True), ("60000", True), ("50000", False), ("50000.00", False), ("1", False)],
)
def test_a_rule_by_amount_applies_strictly_above_its_threshold(value: str, applies: bool) -> None:
    found = approval(settings([by_amount("large", "50000")]), usdc(value))
    if applies:
        assert (found.required, found.rule, found.threshold) == (2, "large", "50,000 USDC")
        assert found.why == "above 50,000 USDC"
    else:
        assert (found.required, found.rule, found.threshold, found.why) == (1, None, None, None)


def test_of_the_matching_rules_the_highest_above_wins_wholly() -> None:
    rules = [
        by_amount("large", "50000", 2),
        by_amount("huge", "250000", 3, operators=["ou_alice", "ou_bob", "ou_carol"]),
        by_amount("medium", "10000", 2, operators=["ou_alice", "ou_bob"]),
    ]
    config = settings(rules)
    assert approval(config, usdc("5000")).rule is None
    medium = approval(config, usdc("20000"))
    assert (medium.rule, medium.approvers) == ("medium", ("ou_alice", "ou_bob"))
    large = approval(config, usdc("60000"))
    # wholly: "large" names no operators, so medium's narrower set does not carry over
    assert (large.rule, large.required, large.approvers) == ("large", 2, EVERYONE)
    huge = approval(config, usdc("300000"))
    assert (huge.rule, huge.required, huge.threshold) == ("huge", 3, "250,000 USDC")


def test_a_rule_by_amount_beats_a_rule_by_kind_even_when_it_asks_fewer() -> None:
    config = settings(
        [rule("orders", kinds=[ORDER], required_confirmations=3), by_amount("large", "50000", 2)]
    )
    assert approval(config, usdc("100")).rule == "orders"
    found = approval(config, usdc("60000"))
    assert (found.rule, found.required) == ("large", 2)


def test_a_tie_goes_to_the_first_listed() -> None:
    first = by_amount("first", "50000", 2, operators=["ou_alice", "ou_bob"])
    second = by_amount("second", "50000", 3)
    assert approval(settings([first, second]), usdc("60000")).rule == "first"
    assert approval(settings([second, first]), usdc("60000")).rule == "second"


def test_a_rules_operators_narrow_who_may_confirm() -> None:
    config = settings(
        [by_amount("huge", "250000", 1, operators=["ou_bob"])], required_confirmations=1
    )
    found = approval(config, usdc("300000"))
    assert (found.required, found.approvers) == (1, ("ou_bob",))
    assert approval(config, usdc("1000")).approvers == EVERYONE


def test_a_rule_without_a_number_keeps_the_audiences_own() -> None:
    config = settings(
        [rule("only-alice", kinds=[ORDER], operators=["ou_alice", "ou_bob"])],
        required_confirmations=2,
    )
    found = approval(config, usdc("1"))
    assert (found.rule, found.required, found.approvers) == (
        "only-alice",
        2,
        ("ou_alice", "ou_bob"),
    )


def test_a_notional_in_another_currency_does_not_match() -> None:
    config = settings([by_amount("large", "50000")])
    assert approval(config, Amount(Decimal("900000"), "USDT")).rule is None
    assert approval(config, Amount(None, "USDT")).rule is None


def test_an_unknown_notional_counts_as_above_every_amount_and_says_so() -> None:
    rules = [by_amount("large", "50000", 2), by_amount("huge", "250000", 3)]
    found = approval(settings(rules), Amount(None, "USDC"))
    assert (found.rule, found.required, found.threshold) == ("huge", 3, "250,000 USDC")
    assert found.notional == "unknown USDC" and not found.notional_known
    assert found.why == "notional unknown, counted as above 250,000 USDC"


def test_a_message_never_matches_a_rule_by_amount_but_does_a_rule_by_kind() -> None:
    amount_only = settings([by_amount("large", "0")])
    assert approval(amount_only, None, kind=MESSAGE).rule is None
    by_kind = settings(
        [by_amount("large", "0"), rule("messages", kinds=[MESSAGE], required_confirmations=2)]
    )
    found = approval(by_kind, None, kind=MESSAGE)
    assert (found.rule, found.required, found.threshold, found.notional) == (
        "messages",
        2,
        None,
        None,
    )
    assert found.why == "rule messages"


# -- filters ------------------------------------------------------------------------------------


def test_a_rule_applies_only_to_its_kinds() -> None:
    config = settings([by_amount("large", "50000", kinds=[MESSAGE]), rule("msgs", kinds=[MESSAGE])])
    assert approval(config, usdc("60000")).rule is None
    assert approval(config, None, kind=MESSAGE).rule == "msgs"


def test_a_rule_applies_only_to_its_audiences() -> None:
    config = settings([by_amount("desk-large", "50000", audiences=["desk"])])
    assert approval(config, usdc("60000")).rule is None
    found = approval(config, usdc("60000"), audience="desk")
    assert (found.rule, found.approvers) == ("desk-large", ("ou_dave", "ou_erin"))
    everywhere = settings([by_amount("large", "50000", audiences=["*"])])
    assert approval(everywhere, usdc("60000"), audience="desk").rule == "large"


# -- the policy digest --------------------------------------------------------------------------


def ops_digest(config: Settings) -> str:
    return policy_digests(config)["ops"]


BASE_RULES = [by_amount("large", "50000"), by_amount("desk-large", "1000", audiences=["desk"])]


@pytest.mark.parametrize(
    ("what", "changed"),
    [
        ("required_confirmations", settings(BASE_RULES, required_confirmations=2)),
        ("an operator removed", settings(BASE_RULES, operators=["ou_alice", "ou_bob"])),
        ("an operator added", settings(BASE_RULES, operators=[*EVERYONE, "ou_frank"])),
        ("allow_self_approval", settings(BASE_RULES, allow_self_approval=True)),
        ("a rule's above", settings([by_amount("large", "40000"), BASE_RULES[1]])),
        ("a rule's number", settings([by_amount("large", "50000", 3), BASE_RULES[1]])),
        (
            "a rule's operators",
            settings(
                [by_amount("large", "50000", operators=["ou_alice", "ou_bob"]), BASE_RULES[1]]
            ),
        ),
        ("a rule's kinds", settings([by_amount("large", "50000", kinds=[ORDER]), BASE_RULES[1]])),
        ("a rule's name", settings([by_amount("big", "50000"), BASE_RULES[1]])),
        ("a rule removed", settings(BASE_RULES[1:])),
        ("a rule added", settings([*BASE_RULES, rule("messages", kinds=[MESSAGE])])),
    ],
)
def test_the_policy_digest_changes_with_anything_that_decides_what_ops_needs(
    what: str, changed: Settings
) -> None:
    assert ops_digest(changed) != ops_digest(settings(BASE_RULES)), what


def escalating(**desk: Any) -> Settings:
    """ops escalating to desk at its reminder, desk changed by `desk`."""
    ops = {**OPS, "remind_before_s": 300, "escalate_to": "desk"}
    return parse({"audiences": [ops, {**DESK, **desk}], "approval_rules": BASE_RULES})


def test_the_escalation_audience_is_part_of_the_escalating_audiences_policy() -> None:
    """Its operators may decide ops' operations and its chat shows the copy: a change to
    either is a new policy for ops (an old card's click is stale)."""
    base = ops_digest(escalating())
    assert base != ops_digest(settings(BASE_RULES, remind_before_s=300))  # escalation added
    assert ops_digest(escalating(operators=["ou_dave"])) != base
    assert ops_digest(escalating(operators=[*DESK["operators"], "ou_frank"])) != base
    assert ops_digest(escalating(chat_id="oc_desk_2")) != base
    assert ops_digest(escalating(operators=["ou_erin", "ou_dave"])) == base  # a set


def test_the_order_of_the_rules_that_cover_an_audience_is_part_of_its_policy() -> None:
    # ties go to the first listed, so swapping two rules may change what applies
    first, second = by_amount("first", "50000", 2), by_amount("second", "50000", 3)
    assert ops_digest(settings([first, second])) != ops_digest(settings([second, first]))


def test_the_policy_digest_ignores_what_cannot_change_what_ops_needs() -> None:
    base = ops_digest(settings(BASE_RULES))
    other_audience_rule = [BASE_RULES[0], by_amount("desk-large", "2000", 3, audiences=["desk"])]
    assert ops_digest(settings(other_audience_rule)) == base
    assert ops_digest(settings(BASE_RULES[:1])) == base  # desk's rule removed
    reordered = settings(BASE_RULES, operators=["ou_bob", "ou_alice", "ou_carol"])
    assert ops_digest(reordered) == base  # the operators are a set
    desk_changed = parse(
        {
            "audiences": [OPS, {**DESK, "required_confirmations": 2}],
            "approval_rules": BASE_RULES,
        }
    )
    assert ops_digest(desk_changed) == base
    assert policy_digests(desk_changed)["desk"] != policy_digests(settings(BASE_RULES))["desk"]


def test_every_audience_has_its_own_digest() -> None:
    digests = policy_digests(settings(BASE_RULES))
    assert set(digests) == {"ops", "desk"}
    assert digests["ops"] != digests["desk"]
    assert all(len(digest) == 64 and int(digest, 16) >= 0 for digest in digests.values())


# -- amounts in words ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "currency", "words"),
    [
        ("50000", "USDC", "50,000 USDC"),
        ("250000", "USDC", "250,000 USDC"),
        ("1234567.25", "USDT", "1,234,567.25 USDT"),
        ("999", "BTC", "999 BTC"),
        ("0.5", "USDC", "0.5 USDC"),
        ("1000.00000001", "USDC", "1,000.00000001 USDC"),  # the rule's own digits, none lost
        ("50000", None, "50,000"),
    ],
)
def test_amount_words(value: str, currency: str | None, words: str) -> None:
    assert amount_words(value, currency) == words
