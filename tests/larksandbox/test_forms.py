"""Card forms and confirm dialogs as Lark's client handles them (docs/lark-reference.md §1.1,
§6, §6.1): a submit sends the typed inputs as `action.form_value` with the button's `name` to
the unmodified SDK; what the client refuses to submit, a reset and a cancelled dialog send
nothing; the checker refuses forms Lark refuses."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.support.receivers import Receiver
from tests.support.sandbox import Sandbox, form_card, lark_client, send_card, v2_card


async def sent_form(sandbox: Sandbox, **kwargs: Any) -> str:
    created = await send_card(lark_client(sandbox), form_card(**kwargs))
    assert created.success(), created.msg
    message_id: str = created.data.message_id
    return message_id


async def click(sandbox: Sandbox, message_id: str, **body: Any) -> tuple[int, Any]:
    return await sandbox.control(
        "POST", f"/messages/{message_id}/click", {"operator": "ou_alice", **body}
    )


# -- forms -----------------------------------------------------------------------------------


async def test_a_submit_sends_every_input_of_the_form_and_the_buttons_name(
    sandbox: Sandbox, receiver: Receiver
) -> None:
    message_id = await sent_form(sandbox)
    receiver.answer = lambda data: {
        "toast": {"type": "info", "content": f"Rejected: {data.event.action.form_value['reason']}"}
    }
    status, reply = await click(
        sandbox, message_id, button="reject_submit", form={"reason": "price moved"}
    )
    assert status == 200, reply
    assert reply["sent"] is True and reply["status"] == "answered"
    assert reply["toast"] == {"type": "info", "content": "Rejected: price moved"}
    # the untouched input sends its default_value
    assert reply["form_value"] == {"reason": "price moved", "ticket": "T-1"}
    assert reply["dialog"] is None
    data = receiver.cards.get_nowait()  # P2CardActionTrigger, parsed by the unmodified SDK
    action = data.event.action
    assert action.tag == "button" and action.name == "reject_submit"
    assert action.value == {"action": "reject", "req": "42"}
    assert action.form_value == {"reason": "price moved", "ticket": "T-1"}
    assert data.event.context.open_message_id == message_id
    [recorded] = sandbox.state.clicks
    assert (recorded.name, recorded.form_value) == ("reject_submit", action.form_value)


async def test_an_empty_input_is_sent_as_an_empty_string(
    sandbox: Sandbox, receiver: Receiver
) -> None:
    message_id = await sent_form(sandbox)
    # by name, or by the visible text like any button
    status, reply = await click(sandbox, message_id, button="Back", form={"ticket": ""})
    assert status == 200, reply
    action = receiver.cards.get_nowait().event.action
    assert action.name == "back_submit" and action.value == {"action": "back", "req": "42"}
    assert action.form_value == {"reason": "", "ticket": ""}


@pytest.mark.parametrize(
    ("form", "code", "needle"),
    [
        ({"reason": "x", "comment": "y"}, "unknown_field", "'comment'"),
        ({"reason": "x" * 201}, "value_too_long", "at most 200"),
        ({"reason": ""}, "required_field_empty", "有必填项未填写"),
        ({}, "required_field_empty", "form.reason"),
        ({"reason": 3}, "invalid_form", "form.reason"),
        (["reason"], "invalid_form", "form:"),
    ],
    ids=[
        "unknown-input",
        "over-max-length",
        "required-empty",
        "required-untouched",
        "not-text",
        "not-object",
    ],
)
async def test_what_the_client_refuses_to_submit_sends_nothing(
    sandbox: Sandbox, receiver: Receiver, form: Any, code: str, needle: str
) -> None:
    message_id = await sent_form(sandbox, required=True)
    status, reply = await click(sandbox, message_id, button="reject_submit", form=form)
    assert (status, reply["error"]["code"]) == (422, code), reply
    assert needle in reply["error"]["message"]
    assert receiver.cards.empty() and sandbox.state.clicks == []


async def test_the_longest_text_an_input_takes_is_sent(
    sandbox: Sandbox, receiver: Receiver
) -> None:
    message_id = await sent_form(sandbox, required=True, max_length=5)
    status, reply = await click(
        sandbox, message_id, button="reject_submit", form={"reason": "四五六七八"}
    )
    assert status == 200, reply
    assert receiver.cards.get_nowait().event.action.form_value["reason"] == "四五六七八"


async def test_a_reset_and_a_form_for_a_button_outside_a_form_send_nothing(
    sandbox: Sandbox, receiver: Receiver
) -> None:
    message_id = await sent_form(sandbox)
    status, reply = await click(sandbox, message_id, button="clear", form={"reason": "x"})
    assert (status, reply) == (200, {"sent": False, "reason": "form_reset", "dialog": None})
    status, reply = await click(sandbox, message_id, button="confirm", form={"reason": "x"})
    assert (status, reply["error"]["code"]) == (422, "not_in_form")
    assert receiver.cards.empty() and sandbox.state.clicks == []


async def test_a_button_outside_a_form_sends_no_form_value(
    sandbox: Sandbox, receiver: Receiver
) -> None:
    created = await send_card(lark_client(sandbox))
    status, reply = await click(sandbox, created.data.message_id, button="confirm")
    assert status == 200 and reply["sent"] is True and reply["form_value"] is None
    action = receiver.cards.get_nowait().event.action
    assert action.form_value is None and action.name == "" and action.value == {"action": "confirm"}


# -- confirm dialogs ---------------------------------------------------------------------------


async def test_a_cancelled_dialog_sends_nothing_and_shows_what_the_operator_read(
    sandbox: Sandbox, receiver: Receiver
) -> None:
    message_id = await sent_form(sandbox)
    shown = {"title": "Confirm the order?", "text": "Buy 0.01 BTC at market"}
    status, reply = await click(sandbox, message_id, button="confirm", dialog="cancel")
    assert (status, reply) == (200, {"sent": False, "reason": "dialog_cancelled", "dialog": shown})
    assert receiver.cards.empty() and sandbox.state.clicks == []

    status, reply = await click(sandbox, message_id, button="confirm")  # accept: the default
    assert status == 200 and reply["sent"] is True and reply["dialog"] == shown
    assert receiver.cards.get_nowait().event.action.value == {"action": "confirm", "req": "42"}

    # the dialog is shown in the operator's language
    sandbox.state.users["ou_bob"].locale = "zh_cn"
    status, reply = await sandbox.control(
        "POST",
        f"/messages/{message_id}/click",
        {"operator": "ou_bob", "button": "confirm", "dialog": "accept"},
    )
    assert status == 200 and reply["dialog"]["text"] == "以市价买入 0.01 BTC"


async def test_dialog_answers_are_checked(sandbox: Sandbox, receiver: Receiver) -> None:
    message_id = await sent_form(sandbox)
    cases = [
        ({"button": "confirm", "dialog": "maybe"}, "invalid_dialog"),
        ({"button": "reject_submit", "dialog": "cancel"}, "no_dialog"),  # it shows none
        ({"value": {"action": "confirm"}, "dialog": "accept"}, "invalid_value"),
    ]
    for body, code in cases:
        status, reply = await click(sandbox, message_id, **body)
        assert (status, reply["error"]["code"]) == (422, code), body
    assert receiver.cards.empty()


async def test_an_inputs_confirm_shows_when_its_form_is_submitted(
    sandbox: Sandbox, receiver: Receiver
) -> None:
    card = form_card()
    card["body"]["elements"][1]["elements"][0]["confirm"] = {
        "title": {"tag": "plain_text", "content": "Send the reason?"}
    }
    created = await send_card(lark_client(sandbox), card)
    assert created.success(), created.msg
    status, reply = await click(
        sandbox, created.data.message_id, button="reject_submit", dialog="cancel"
    )
    assert (status, reply["dialog"]) == (200, {"title": "Send the reason?", "text": ""})
    assert reply["sent"] is False and receiver.cards.empty()


# -- the checker -------------------------------------------------------------------------------


def form_of(card: dict[str, Any]) -> dict[str, Any]:
    form: dict[str, Any] = card["body"]["elements"][1]
    return form


@pytest.mark.parametrize(
    ("mutate", "code", "needle"),
    [
        (lambda c: form_of(c).pop("name"), 200530, "a form needs a name"),
        (lambda c: form_of(c)["elements"][3].pop("name"), 200530, "button in form 'reject_form'"),
        (lambda c: form_of(c)["elements"][0].update(name=""), 200530, "input in form"),
        (
            lambda c: form_of(c)["elements"][2]["columns"][0]["elements"][0].pop("name"),
            200530,
            "ErrPath: ROOT -> body -> elements -> [1](tag: form) -> elements -> [2](tag: column_set)",
        ),
        (
            lambda c: form_of(c)["elements"][1].update(name="reason"),
            11310,
            "name(reason) duplicate",
        ),
        (lambda c: form_of(c).update(name="reason"), 11310, "name(reason) duplicate"),
        (lambda c: form_of(c)["elements"][3].update(form_action_type="clear"), 200621, "'clear'"),
        (lambda c: form_of(c)["elements"][0].update(max_length=1001), 200621, "from 1 to 1000"),
        (lambda c: form_of(c)["elements"][0].update(max_length="50"), 200621, "an integer"),
        (
            lambda c: c["body"]["elements"].append(
                {"tag": "collapsible_panel", "elements": [copy.deepcopy(form_of(c))]}
            ),
            200621,
            "a form stands only in body.elements",
        ),
        (
            lambda c: form_of(c)["elements"].append({"tag": "form", "name": "f2", "elements": []}),
            200621,
            "a form stands only in body.elements",
        ),
        (lambda c: c["body"]["elements"][2]["confirm"].pop("title"), 200621, "needs a title"),
    ],
    ids=[
        "form-unnamed",
        "button-unnamed",
        "input-empty-name",
        "nested-button-unnamed",
        "duplicate-field-name",
        "form-name-taken",
        "unknown-form-action",
        "max-length-over-1000",
        "max-length-not-int",
        "form-in-panel",
        "form-in-form",
        "confirm-untitled",
    ],
)
async def test_a_form_lark_refuses_is_refused(
    sandbox: Sandbox, mutate: Any, code: int, needle: str
) -> None:
    card = form_card()
    mutate(card)
    created = await send_card(lark_client(sandbox), card)
    assert not created.success() and created.code == 230099, created.msg
    assert f"ErrCode: {code};" in created.msg and needle in created.msg, created.msg


async def test_a_valid_form_card_is_accepted_and_names_outside_forms_are_optional(
    sandbox: Sandbox,
) -> None:
    card = form_card(required=True, max_length=1000)
    form_of(card)["elements"][0].update(
        label={"tag": "plain_text", "content": "Reason"}, default_value="", width="fill"
    )
    form_of(card).update(direction="vertical", vertical_spacing="8px", element_id="reject_box")
    unnamed = copy.deepcopy(v2_card()["body"]["elements"][1])  # buttons without names
    for column in unnamed["columns"]:
        column["elements"][0].pop("element_id")
    card["body"]["elements"].append(unnamed)
    created = await send_card(lark_client(sandbox), card)
    assert created.success(), created.msg
