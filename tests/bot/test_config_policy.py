"""The approval policy in the config (bot/config/checks.py `approval_policy`): every policy
that could never be met, or that names what does not exist, is a problem naming its field;
`countersign config check` lists them all in one run and `countersign run` refuses to start.

(tests/bot/test_config.py holds the rest of the config's tests.)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bot.config import check_data
from tests.support.factories import LARGE_ORDERS_RULE, TRIO_AUDIENCE
from tests.support.processes import ENV, cli

TOKEN_ENV = "AGENT_TOKEN"
ENVIRON = {TOKEN_ENV: "y" * 32}
OPS = TRIO_AUDIENCE
DESK = {"name": "desk", "chat_id": "oc_desk", "operators": ["ou_dave", "ou_erin"]}
LARGE = LARGE_ORDERS_RULE
# `field: reason: fix`, the field path never containing spaces.
PROBLEM_LINE = re.compile(r"^\S+: .+: .+$")


def problems(
    rules: list[dict[str, Any]], audiences: list[dict[str, Any]] | None = None
) -> list[tuple[str, str]]:
    data = {
        "audiences": audiences if audiences is not None else [OPS, DESK],
        "approval_rules": rules,
        "proposers": [{"name": "agent", "token_env": TOKEN_ENV}],
    }
    _settings, found = check_data(data, ENVIRON)
    return [(problem.field, problem.reason) for problem in found]


def large(**changes: Any) -> dict[str, Any]:
    return {key: value for key, value in {**LARGE, **changes}.items() if value is not None}


# -- a valid policy -------------------------------------------------------------------------------


def test_a_valid_policy_has_no_problem() -> None:
    rules = [
        large(),
        large(name="huge", above="250000", audiences=["ops"], operators=["ou_alice", "ou_bob"]),
        {"name": "messages", "kinds": ["message.send"], "audiences": ["ops"]},
        {"name": "desk-all", "audiences": ["desk"], "required_confirmations": 2},
    ]
    audiences = [{**OPS, "required_confirmations": 2}, DESK]
    assert problems(rules, audiences) == []
    assert problems([], [{**OPS, "required_confirmations": 3}]) == []  # 3 of 3 can be met


# -- each problem names its field -----------------------------------------------------------------


def test_a_rule_with_an_empty_operator_set_fails_closed() -> None:
    [(field, reason)] = problems([large(operators=[])])
    assert field == "approval_rules[0].operators"
    assert "is empty" in reason and "nobody could confirm" in reason


def test_an_audience_with_no_operators_fails_closed() -> None:
    [(field, _reason)] = problems([], [{**OPS, "operators": []}])
    assert field == "audiences[0].operators"


def test_an_unknown_audience_in_a_rule() -> None:
    found = problems([large(), large(name="treasury-large", audiences=["ops", "treasury"])])
    assert found == [("approval_rules[1].audiences", "no audience 'treasury'")]


def test_an_unknown_kind_in_a_rule() -> None:
    found = problems([large(kinds=["finance.order", "crypto.swap"])])
    assert found == [("approval_rules[0].kinds", "unknown kind 'crypto.swap'")]


@pytest.mark.parametrize(
    "rule", [large(currency=None), large(above=None)], ids=["above-alone", "currency-alone"]
)
def test_an_amount_needs_its_currency_and_a_currency_its_amount(rule: dict[str, Any]) -> None:
    [(field, reason)] = problems([rule])
    assert field == "approval_rules[0].above"
    assert "currency" in reason


def test_a_rules_operator_must_be_an_operator_of_every_audience_it_covers() -> None:
    only_ops = problems(
        [large(audiences=["ops"], required_confirmations=1, operators=["ou_alice", "ou_dave"])]
    )
    assert only_ops == [
        ("approval_rules[0].operators", "ou_dave is not an operator of audience 'ops'")
    ]
    # by default a rule covers every audience: ou_alice is no operator of desk
    everywhere = problems([large(required_confirmations=1, operators=["ou_alice"])])
    assert everywhere == [
        ("approval_rules[0].operators", "ou_alice is not an operator of audience 'desk'")
    ]


def test_a_rule_only_raises_what_an_audience_asks() -> None:
    audiences = [{**OPS, "required_confirmations": 2}, DESK]
    found = problems([large(audiences=["ops"], required_confirmations=1)], audiences)
    assert found == [("approval_rules[0].required_confirmations", "1 is below audience 'ops''s 2")]


def test_a_rule_asking_more_than_its_approvers_could_ever_give() -> None:
    narrow = problems(
        [large(audiences=["ops"], required_confirmations=3, operators=["ou_alice", "ou_bob"])]
    )
    [(field, reason)] = narrow
    assert field == "approval_rules[0].required_confirmations"
    assert "needs 3 confirmations from 2 operator(s) of audience 'ops'" in reason
    # the audience's own number applies where the rule names none
    inherited = problems(
        [{"name": "only-alice", "audiences": ["ops"], "operators": ["ou_alice"]}],
        [{**OPS, "required_confirmations": 2}],
    )
    assert [field for field, _reason in inherited] == ["approval_rules[0].required_confirmations"]
    # a rule for every audience is judged against each: desk has two operators
    wide = problems([large(required_confirmations=3)])
    assert wide == [
        (
            "approval_rules[0].required_confirmations",
            "needs 3 confirmations from 2 operator(s) of audience 'desk', "
            "so what it covers could never be confirmed",
        )
    ]


def test_an_audience_asking_more_than_its_operators() -> None:
    found = problems([], [OPS, {**DESK, "required_confirmations": 3}])
    assert found == [
        (
            "audiences[1].required_confirmations",
            "needs 3 confirmations but audience 'desk' has 2 operator(s), "
            "so nothing could ever be confirmed",
        )
    ]


# -- escalation: another audience, with a chat of its own, at the reminder -------------------------

ESCALATING = {**OPS, "remind_before_s": 300, "escalate_to": "desk"}


def test_an_escalation_to_another_audiences_chat_at_the_reminder_is_valid() -> None:
    assert problems([], [DESK, ESCALATING]) == []


def test_an_escalation_to_an_unknown_audience() -> None:
    found = problems([], [DESK, {**ESCALATING, "escalate_to": "leads"}])
    assert found == [("audiences[1].escalate_to", "'leads' is not another configured audience")]


def test_an_audience_escalating_to_itself() -> None:
    found = problems([], [DESK, {**ESCALATING, "escalate_to": "ops"}])
    assert found == [("audiences[1].escalate_to", "'ops' is not another configured audience")]


def test_an_escalation_without_a_reminder_to_escalate_at() -> None:
    without = {key: value for key, value in ESCALATING.items() if key != "remind_before_s"}
    found = problems([], [DESK, without])
    assert found == [
        (
            "audiences[1].escalate_to",
            "escalates at the reminder, and this audience sets no remind_before_s",
        )
    ]


def test_an_escalation_to_an_audience_in_the_same_chat() -> None:
    found = problems([], [{**DESK, "chat_id": "oc_ops"}, ESCALATING])
    assert found == [("audiences[1].escalate_to", "audience 'desk' posts to the same chat oc_ops")]


def test_every_policy_problem_is_listed_at_once() -> None:
    rules = [
        large(audiences=["treasury"], operators=[]),
        large(name="odd", kinds=["crypto.swap"], currency=None),
    ]
    fields = [
        field for field, _reason in problems(rules, [OPS, {**DESK, "required_confirmations": 3}])
    ]
    assert fields == [
        "audiences[1].required_confirmations",
        "approval_rules[0].audiences",
        "approval_rules[0].operators",
        "approval_rules[1].kinds",
        "approval_rules[1].above",
        "approval_rules[1].required_confirmations",  # 2, below desk's 3
    ]


# -- the real process ---------------------------------------------------------------------------


BROKEN_POLICY = """
[store]
url = "sqlite+aiosqlite:///{store}"

[[audiences]]
name = "ops"
chat_id = "oc_ops"
operators = ["ou_alice", "ou_bob", "ou_carol"]

[[approval_rules]]
name = "large-orders"
audiences = ["treasury"]
kinds = ["finance.order"]
above = "50000"
currency = "USDC"
operators = []

[[proposers]]
name = "agent"
token_env = "{token_env}"
"""


def broken_policy(tmp_path: Path) -> tuple[Path, Path]:
    store = tmp_path / "var" / "countersign.db"
    config = tmp_path / "policy.toml"
    config.write_text(BROKEN_POLICY.format(store=store, token_env=TOKEN_ENV), encoding="utf-8")
    return config, store


def process_env() -> dict[str, str]:
    clean = {key: value for key, value in ENV.items() if not key.startswith("COUNTERSIGN_")}
    return {**clean, **ENVIRON}


async def test_config_check_names_every_policy_problem_in_one_run(tmp_path: Path) -> None:
    config, store = broken_policy(tmp_path)
    result = await cli("config", "check", "--config", str(config), env=process_env(), cwd=tmp_path)
    assert result.code == 2, result.err
    summary, *lines = result.err.splitlines()
    assert summary == f"{config}: 2 problems; each says what to change:"
    assert all(PROBLEM_LINE.match(line) for line in lines), lines
    assert [line.split(": ", 1)[0] for line in lines] == [
        "approval_rules[0].audiences",
        "approval_rules[0].operators",
    ]
    assert "no audience 'treasury'" in lines[0]
    assert "config ok" not in result.err
    assert not store.exists()


async def test_run_refuses_to_start_on_a_policy_that_could_not_be_met(tmp_path: Path) -> None:
    config, store = broken_policy(tmp_path)
    result = await cli("run", "--config", str(config), env=process_env(), cwd=tmp_path)
    assert result.code == 2, result.err
    assert "Traceback" not in result.err
    lines = result.err.strip().splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == [
        "approval_rules[0].audiences",
        "approval_rules[0].operators",
    ]
    assert "countersign API listening" not in result.out
    assert not store.exists(), "nothing was opened"


# -- mistakes that would pass unseen ---------------------------------------------------------------


def test_an_operator_listed_twice_is_a_problem_and_counts_once() -> None:
    twice = {**OPS, "operators": ["ou_alice", "ou_alice"], "required_confirmations": 2}
    found = problems([], [twice])
    assert ("audiences[0].operators", "ou_alice is listed twice (one person counts once)") in found
    assert any(field == "audiences[0].required_confirmations" for field, _ in found)
    assert ("approval_rules[0].operators", "ou_alice is listed twice (one person counts once)") in (
        problems([large(operators=["ou_alice", "ou_alice"], required_confirmations=1)])
    )


def test_a_rule_that_could_never_apply_is_a_problem() -> None:
    assert problems([large(audiences=[])]) == [
        ("approval_rules[0].audiences", "is empty, so the rule would never apply")
    ]
    assert problems([large(kinds=[])]) == [
        ("approval_rules[0].kinds", "is empty, so the rule would never apply")
    ]
    assert problems([large(kinds=["message.send"])]) == [
        ("approval_rules[0].above", "applies by amount, and message.send moves none")
    ]
    assert problems([large(), large()]) == [("approval_rules", "name 'large-orders' is used twice")]


def test_one_broken_rule_does_not_hide_the_others_problems() -> None:
    found = problems([large(above="5x"), large(name="other", operators=[])])
    fields = [field for field, _ in found]
    assert any(
        field.startswith("approval_rules.0") or "approval_rules[0]" in field for field in fields
    )
    assert "approval_rules[1].operators" in fields
