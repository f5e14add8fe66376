"""The sandbox reads a text message the way Lark does (larksandbox/textmarkup.py): `<at>`
mentions (everyone with `all`), `<a href>` and `[label](url)` links, style tags. Sent with
the unmodified SDK; read back through the SDK's message read and the control API."""

from __future__ import annotations

import json

from lark_oapi.api.im.v1 import GetMessageRequest  # type: ignore[import-untyped]

from tests.support.sandbox import Sandbox, create_request, lark_client, sdk


async def _sent(sandbox: Sandbox, text: str) -> tuple[dict[str, object], list[object]]:
    """The control API's reading of a text the app sends, and the SDK's read `mentions`."""
    client = lark_client(sandbox)
    created = await sdk(
        client.im.v1.message.create,
        create_request("oc_ops", json.dumps({"text": text}), msg_type="text"),
    )
    assert created.success(), created.msg
    message_id = created.data.message_id
    got = await sdk(
        client.im.v1.message.get, GetMessageRequest.builder().message_id(message_id).build()
    )
    assert got.success(), got.msg
    [item] = got.data.items
    assert json.loads(item.body.content) == {"text": text}  # the content as it was sent
    status, view = await sandbox.control("GET", f"/messages/{message_id}")
    assert status == 200
    reading: dict[str, object] = view["text_reading"]
    return reading, [(m.key, m.id, m.name) for m in item.mentions or []]


async def test_a_mention_of_everyone_and_of_a_person_are_mentions(sandbox: Sandbox) -> None:
    reading, mentions = await _sent(
        sandbox, '<at user_id="all"></at> and <AT open_id = ou_bob>Bobby</at>, <b>now</b>'
    )
    assert reading == {"shown": "@All and @Bob, now", "mentions": ["all", "ou_bob"], "links": []}
    # a message read lists the users (everyone is no user)
    assert mentions == [("@_user_1", "ou_bob", "Bob")]


async def test_links_show_their_label_and_are_recorded(sandbox: Sandbox) -> None:
    reading, mentions = await _sent(
        sandbox, 'pay [here](https://evil.example/a) or <a href="https://evil.example/b">here</a>'
    )
    assert reading["shown"] == "pay here or here"
    assert sorted(reading["links"]) == ["https://evil.example/a", "https://evil.example/b"]  # type: ignore[type-var]
    assert reading["mentions"] == [] and mentions == []


async def test_look_alike_brackets_are_only_text(sandbox: Sandbox) -> None:
    text = '\uff1cat user_id="all"\uff1e\uff1c/at\uff1e \uff3bhere\uff3d(https://evil.example)'
    reading, mentions = await _sent(sandbox, text)
    assert reading == {"shown": text, "mentions": [], "links": []}
    assert mentions == []


async def test_a_card_has_no_text_reading(sandbox: Sandbox) -> None:
    client = lark_client(sandbox)
    created = await sdk(
        client.im.v1.message.create,
        create_request("oc_ops", json.dumps({"schema": "2.0", "body": {"elements": []}})),
    )
    assert created.success(), created.msg
    _, view = await sandbox.control("GET", f"/messages/{created.data.message_id}")
    assert view["text_reading"] is None
