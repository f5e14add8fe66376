"""The unmodified lark-oapi Client against the sandbox: the card and message content Lark
refuses (docs/lark-reference.md §6.1), each with its code, and nothing created or changed."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from lark_oapi.api.im.v1 import (  # type: ignore[import-untyped]
    ReplyMessageRequest,
    ReplyMessageRequestBody,
)

from larksandbox import answers
from larksandbox.cards.schema import ELEMENT_LIMIT, element_count
from larksandbox.hub import CALLBACK_BAD_CARD
from tests.support.sandbox import (
    Sandbox,
    card_content,
    create_request,
    lark_client,
    patch_request,
    sdk,
    send_card,
    v2_card,
)


def with_elements(*elements: dict[str, Any], card: dict[str, Any] | None = None) -> dict[str, Any]:
    card = copy.deepcopy(card or v2_card())
    card["body"]["elements"].extend(elements)
    return card


async def chat_messages(sandbox: Sandbox, chat_id: str = "oc_ops") -> list[tuple[str, str]]:
    """Each message of the chat and its content (the control API also lists refusals)."""
    _status, listing = await sandbox.control("GET", f"/chats/{chat_id}/messages")
    return [(item["message_id"], item["content"]) for item in listing["items"]]


async def assert_refused_everywhere(
    sandbox: Sandbox, card: dict[str, Any], code: int, *needles: str
) -> None:
    """Create, reply and patch all refuse `card` with `code`; no message appears, the card
    on the chat stays as it was."""
    client = lark_client(sandbox)
    original = await send_card(client)
    assert original.success(), original.msg
    message_id = original.data.message_id
    before = await chat_messages(sandbox)
    content = card_content(card)

    created = await send_card(client, card)
    reply = (
        ReplyMessageRequest.builder()
        .message_id(message_id)
        .request_body(
            ReplyMessageRequestBody.builder().msg_type("interactive").content(content).build()
        )
        .build()
    )
    replied = await sdk(client.im.v1.message.reply, reply)
    patched = await sdk(client.im.v1.message.patch, patch_request(message_id, content))
    for answer in (created, replied, patched):
        assert not answer.success()
        assert answer.code == code, answer.msg
        assert answer.raw.status_code == 400
        for needle in needles:
            assert needle in answer.msg, answer.msg
    assert await chat_messages(sandbox) == before
    message = sandbox.state.messages[message_id]
    assert json.loads(message.content) == v2_card()
    assert [rev.source for rev in message.history] == ["create"]


# -- the JSON 2.0 schema ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        pytest.param(lambda c: c["body"]["elements"].append({"tag": "blink"}), "tag blink"),
        pytest.param(lambda c: c["body"]["elements"].append({"content": "x"}), "tag None"),
        pytest.param(
            lambda c: c["body"]["elements"][1]["columns"].append({"tag": "markdown"}),
            "tag markdown",
        ),
        pytest.param(
            lambda c: c["header"].update(title={"tag": "markdown", "content": "x"}),
            "tag markdown",
        ),
    ],
    ids=["unknown-tag", "no-tag", "not-a-column", "title-not-text"],
)
async def test_an_unknown_tag_is_refused(sandbox: Sandbox, mutate: Any, needle: str) -> None:
    card = v2_card()
    mutate(card)
    await assert_refused_everywhere(sandbox, card, 230099, "ErrCode: 200621", needle)


@pytest.mark.parametrize(
    ("mutate", "prop"),
    [
        # 1.0 places and properties, refused in 2.0 (seen live: "unknown property: elements")
        (lambda c: c.update(elements=[]), "elements"),
        (lambda c: c.update(i18n_elements={}), "i18n_elements"),
        (lambda c: c["config"].update(wide_screen_mode=True), "wide_screen_mode"),
        (lambda c: c["header"].update(ud_icon={"token": "x"}), "ud_icon"),
        (lambda c: c["body"]["elements"][0].update(href={"urlVal": {"url": "x"}}), "href"),
        (lambda c: c["body"]["elements"][0].update(lines=2), "lines"),
        (lambda c: c["body"]["elements"][1]["columns"][0].update(flex_mode="none"), "flex_mode"),
        (
            lambda c: c["body"]["elements"][1]["columns"][0]["elements"][0].update(value={}),
            "value",
        ),
        (
            lambda c: c["body"]["elements"][1]["columns"][0]["elements"][0]["text"].update(
                i18n={"zh_cn": "x"}
            ),
            "i18n",
        ),
        (lambda c: c["body"].update(background="grey"), "background"),
    ],
    ids=[
        "root-elements",
        "i18n_elements",
        "config",
        "header",
        "markdown",
        "markdown-lines",
        "column",
        "button",
        "text-element",
        "body",
    ],
)
async def test_an_unknown_property_is_refused(sandbox: Sandbox, mutate: Any, prop: str) -> None:
    card = v2_card()
    mutate(card)
    await assert_refused_everywhere(
        sandbox, card, 230099, "ErrCode: 200621", f"unknown property: {prop}", "ErrPath: ROOT"
    )


@pytest.mark.parametrize(
    "module",
    [
        {
            "tag": "action",
            "actions": [{"tag": "button", "text": {"tag": "plain_text", "content": "Go"}}],
        },
        {"tag": "note", "elements": [{"tag": "plain_text", "content": "small print"}]},
    ],
    ids=["action", "note"],
)
async def test_a_1_0_only_module_in_a_2_0_card_is_refused(
    sandbox: Sandbox, module: dict[str, Any]
) -> None:
    card = with_elements(module)
    await assert_refused_everywhere(
        sandbox,
        card,
        230099,
        "ErrCode: 200861",
        "cards of schema V2 no longer support this capability",
        f"unsupported tag {module['tag']}",
        f"ROOT -> body -> elements -> [2](tag: {module['tag']})",
    )
    # inside a column too
    nested = v2_card()
    nested["body"]["elements"][1]["columns"][0]["elements"].append(module)
    await assert_refused_everywhere(sandbox, nested, 230099, "ErrCode: 200861")
    # the same module in a 1.0 card is fine
    v1 = {"config": {"update_multi": True}, "elements": [module]}
    assert (await send_card(lark_client(sandbox), v1)).success()


def filled(count: int) -> dict[str, Any]:
    """A valid card of exactly `count` elements (components and text elements)."""
    card = v2_card()
    while element_count(card) < count:
        card["body"]["elements"].append({"tag": "hr"})
    assert element_count(card) == count
    return card


async def test_at_most_200_elements_per_card(sandbox: Sandbox) -> None:
    assert (await send_card(lark_client(sandbox), filled(ELEMENT_LIMIT))).success()
    await assert_refused_everywhere(
        sandbox,
        filled(ELEMENT_LIMIT + 1),
        230099,
        "ErrCode: 11310",
        "element exceeds the limit",
        "201 elements",
    )
    # text elements count: 100 divs are 200 elements
    divs = v2_card(buttons=False)
    divs["body"]["elements"] = [
        {"tag": "div", "text": {"tag": "plain_text", "content": str(n)}} for n in range(100)
    ]
    divs["header"]["title"] = {"tag": "plain_text", "content": "t"}
    await assert_refused_everywhere(sandbox, divs, 230099, "element exceeds the limit")


def button_text(content: str, i18n: dict[str, str] | None = None) -> dict[str, Any]:
    card = v2_card()
    text = card["body"]["elements"][1]["columns"][0]["elements"][0]["text"]
    text["content"] = content
    if i18n is not None:
        text["i18n_content"] = i18n
    return card


async def test_a_button_text_is_at_most_100_characters(sandbox: Sandbox) -> None:
    client = lark_client(sandbox)
    assert (await send_card(client, button_text("确" * 100, {"en_us": "y" * 100}))).success()
    await assert_refused_everywhere(
        sandbox, button_text("x" * 101), 230099, "ErrCode: 200621", "101 characters"
    )
    await assert_refused_everywhere(
        sandbox, button_text("ok", {"zh_cn": "确" * 101}), 230099, "101 characters"
    )


def with_element_id(element_id: Any) -> dict[str, Any]:
    return with_elements({"tag": "markdown", "element_id": element_id, "content": "x"})


@pytest.mark.parametrize(
    "element_id",
    ["1st", "_x", "with-dash", "with space", "a" * 21, "", "中文", 7],
    ids=["digit-first", "underscore-first", "dash", "space", "21-chars", "empty", "cjk", "int"],
)
async def test_an_element_id_is_a_letter_then_letters_digits_or_underscore_up_to_20(
    sandbox: Sandbox, element_id: Any
) -> None:
    await assert_refused_everywhere(
        sandbox, with_element_id(element_id), 230099, "ErrCode: 200621", "element_id"
    )


async def test_element_ids_are_unique_in_the_card(sandbox: Sandbox) -> None:
    client = lark_client(sandbox)
    assert (await send_card(client, with_element_id("a" * 20))).success()
    assert (await send_card(client, with_element_id("Status_2"))).success()
    # "confirm" is the first button's id; on a text element too
    await assert_refused_everywhere(
        sandbox, with_element_id("confirm"), 230099, "ErrCode: 11310", "element_id(confirm)"
    )
    text_dup = with_elements(
        {"tag": "div", "text": {"tag": "plain_text", "content": "x", "element_id": "reject"}}
    )
    await assert_refused_everywhere(sandbox, text_dup, 230099, "duplicate")


async def test_a_valid_2_0_card_with_every_common_component_is_accepted(sandbox: Sandbox) -> None:
    card = with_elements(
        {"tag": "hr", "element_id": "rule", "margin": "4px 0"},
        {
            "tag": "div",
            "width": "fill",
            "icon": {"tag": "standard_icon", "token": "info_outlined", "color": "grey"},
            "text": {
                "tag": "plain_text",
                "content": "plain",
                "text_size": "notation",
                "text_color": "grey",
                "text_align": "left",
                "lines": 2,
                "i18n_content": {"zh_cn": "普通"},
            },
        },
        {"tag": "markdown", "content": "**md**", "text_size": "normal", "text_align": "left"},
        {
            "tag": "collapsible_panel",
            "expanded": False,
            "header": {"title": {"tag": "plain_text", "content": "More"}},
            "elements": [{"tag": "markdown", "content": "inside"}],
        },
        {
            "tag": "button",
            "element_id": "open_docs",
            "type": "default",
            "size": "small",
            "width": "default",
            "text": {"tag": "plain_text", "content": "Docs"},
            "hover_tips": {"tag": "plain_text", "content": "opens the docs"},
            "disabled": False,
            "disabled_tips": {"tag": "plain_text", "content": "no"},
            "confirm": {
                "title": {"tag": "plain_text", "content": "Sure?"},
                "text": {"tag": "plain_text", "content": "Really"},
            },
            "behaviors": [{"type": "open_url", "default_url": "https://example.com"}],
        },
    )
    card["config"].update(
        summary={"content": "s", "i18n_content": {"zh_cn": "摘要"}},
        locales=["en_us", "zh_cn"],
        enable_forward=True,
        width_mode="fill",
    )
    card["header"].update(
        subtitle={"tag": "plain_text", "content": "sub"},
        text_tag_list=[
            {"tag": "text_tag", "text": {"tag": "plain_text", "content": "new"}, "color": "blue"}
        ],
        padding="12px",
    )
    card["body"].update(direction="vertical", padding="12px", vertical_spacing="medium")
    created = await send_card(lark_client(sandbox), card)
    assert created.success(), created.msg


# -- size: the request body ------------------------------------------------------------------


async def post_raw(sandbox: Sandbox, body: bytes) -> dict[str, Any]:
    """A create sent by a client other than the SDK, with exactly these bytes as its body."""
    token = await sandbox.token()
    async with sandbox.http.post(
        f"{sandbox.base_url}/open-apis/im/v1/messages?receive_id_type=chat_id",
        data=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    ) as response:
        answer: dict[str, Any] = await response.json()
        return answer


async def test_the_30_kb_limit_is_measured_on_the_request_body(sandbox: Sandbox) -> None:
    """One card of 18 KB of JSON: the SDK sends it in an 18 KB UTF-8 body (accepted); a client
    that escapes non-ASCII (Python's json default) sends each CJK character as six bytes, a
    body over 30 KB (refused, nothing sent)."""
    card = with_elements({"tag": "markdown", "content": "周" * 6000})
    content = card_content(card)
    assert len(content.encode("utf-8")) < 20 * 1024
    assert (await send_card(lark_client(sandbox), card)).success()

    before = await chat_messages(sandbox)
    body = {"receive_id": "oc_ops", "msg_type": "interactive", "content": content}
    escaped = json.dumps(body).encode("ascii")
    assert len(escaped) > 30 * 1024
    refused = await post_raw(sandbox, escaped)
    assert refused["code"] == 230025 and "request body" in refused["msg"]
    assert await chat_messages(sandbox) == before
    assert (await post_raw(sandbox, json.dumps(body, ensure_ascii=False).encode()))["code"] == 0


async def test_a_card_under_30_kb_is_over_on_the_wire_by_its_escapes(sandbox: Sandbox) -> None:
    """Quotes cost a backslash more inside the `content` string: a card of 22 KB of JSON is
    refused when its escapes take the body past 30 KB (measuring the card would pass it)."""
    card = with_elements({"tag": "markdown", "content": '"' * (10 * 1024)})
    content = card_content(card)
    assert 20 * 1024 < len(content.encode("utf-8")) < 30 * 1024
    await assert_refused_everywhere(sandbox, card, 230025, "request body")


async def test_the_150_kb_text_limit_is_measured_on_the_request_body(sandbox: Sandbox) -> None:
    client = lark_client(sandbox)
    before = await chat_messages(sandbox)
    text = json.dumps({"text": '"' * 60_000})  # 120 KB, 240 KB once escaped in the body
    assert len(text.encode("utf-8")) < 150 * 1024
    refused = await sdk(
        client.im.v1.message.create, create_request("oc_ops", text, msg_type="text")
    )
    assert refused.code == 230025 and "request body" in refused.msg
    assert await chat_messages(sandbox) == before
    fits = json.dumps({"text": "x" * 140_000})
    assert (
        await sdk(client.im.v1.message.create, create_request("oc_ops", fits, msg_type="text"))
    ).success()


# -- <at> naming someone the app cannot see --------------------------------------------------


@pytest.mark.parametrize(
    "element",
    [
        {"tag": "markdown", "content": "cc <at id=ou_nobody></at>"},
        {"tag": "markdown", "content": 'cc <at id="ou_nobody"></at>'},
        {"tag": "markdown", "content": "cc <at ids=ou_alice,ou_nobody></at>"},
        {"tag": "markdown", "content": "x", "i18n_content": {"zh_cn": "<at id=ou_nobody></at>"}},
        {"tag": "div", "text": {"tag": "lark_md", "content": "<at id=ou_nobody></at>"}},
        {"tag": "person", "user_id": "ou_nobody"},
        {"tag": "person_list", "persons": [{"id": "ou_alice"}, {"id": "ou_nobody"}]},
    ],
    ids=["at", "quoted", "ids", "i18n", "lark_md", "person", "person_list"],
)
async def test_a_card_naming_a_user_unknown_to_the_app_is_refused(
    sandbox: Sandbox, element: dict[str, Any]
) -> None:
    await assert_refused_everywhere(
        sandbox,
        with_elements(element),
        230099,
        "ErrCode: 100290",
        "There is an invalid user resource(at/person) in your card",
        "ErrorValue: ou_nobody",
    )


async def test_a_card_may_name_the_apps_users_and_everyone(sandbox: Sandbox) -> None:
    card = with_elements(
        {"tag": "markdown", "content": "<at id=ou_alice></at> <at id=all></at>"},
        {"tag": "person", "user_id": "ou_bob"},
        # plain text is shown as written: an <at> there names no one
        {"tag": "div", "text": {"tag": "plain_text", "content": "<at id=ou_nobody></at>"}},
    )
    assert (await send_card(lark_client(sandbox), card)).success()


@pytest.mark.parametrize("who", ["ou_nobody", "ou_eve"], ids=["unknown", "other-tenant"])
async def test_a_text_naming_a_user_unknown_to_the_app_is_refused(
    sandbox: Sandbox, who: str
) -> None:
    client = lark_client(sandbox)
    before = await chat_messages(sandbox, "oc_acme")
    for text in (f'<at user_id="{who}"></at> hello', f"hi <at id={who}></at>"):
        content = json.dumps({"text": text})
        refused = await sdk(
            client.im.v1.message.create, create_request("oc_acme", content, msg_type="text")
        )
        assert refused.code == 230001 and who in refused.msg
    assert await chat_messages(sandbox, "oc_acme") == before
    known = json.dumps({"text": '<at user_id="ou_alice"></at> <at user_id="all"></at> hi'})
    sent = await sdk(client.im.v1.message.create, create_request("oc_acme", known, msg_type="text"))
    assert sent.success(), sent.msg


# -- a callback's answer is held to the same schema ------------------------------------------


def test_a_callback_answer_with_an_invalid_2_0_card_is_a_client_error() -> None:
    current = v2_card()
    bad = with_elements({"tag": "note", "elements": []})
    applied = answers.interpret(current, {"card": {"type": "raw", "data": bad}})
    assert applied.card is None and applied.client_error == CALLBACK_BAD_CARD
    assert "200861" in applied.client_error_msg
    good = answers.interpret(current, {"card": {"type": "raw", "data": v2_card("Done")}})
    assert good.card is not None and good.client_error is None
