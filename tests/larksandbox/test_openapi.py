"""The unmodified lark-oapi Client against the sandbox: every limit and error code."""

from __future__ import annotations

import json
import time
from typing import Any

from lark_oapi.api.im.v1 import (  # type: ignore[import-untyped]
    GetMessageRequest,
    ListMessageRequest,
    ReplyMessageRequest,
    ReplyMessageRequestBody,
)
from lark_oapi.core.token.manager import TokenManager  # type: ignore[import-untyped]

from bot.lark.api import LarkApi
from larksandbox.entities import App
from larksandbox.state import DEFAULT_APP_ID
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


async def test_token_checks_app_and_secret_and_is_reused_until_refresh_window(
    sandbox: Sandbox,
) -> None:
    url = f"{sandbox.base_url}/open-apis/auth/v3/tenant_access_token/internal"
    app = sandbox.app
    async with sandbox.http.post(url, json={"app_id": app.app_id, "app_secret": "wrong"}) as r:
        assert (await r.json())["code"] == 10014
    async with sandbox.http.post(url, json={"app_id": "cli_nope", "app_secret": "x"}) as r:
        assert (await r.json())["code"] == 10003
    first = await sandbox.token()
    assert first.startswith("t-") and await sandbox.token() == first
    await sandbox.control("POST", "/clock", {"advance_s": 7200 - 1700})  # < 30 min left
    second = await sandbox.token()
    assert second != first
    # both valid during the overlap, as on Lark
    for token in (first, second):
        _status, body, _ = await sandbox.openapi("GET", "/im/v1/messages/om_none", token)
        assert body["code"] == 230001


async def test_sdk_sends_a_card_patches_it_replies_and_reads_it_back(sandbox: Sandbox) -> None:
    client = lark_client(sandbox)
    created = await send_card(client)
    assert created.success(), created.msg
    message_id = created.data.message_id
    assert message_id.startswith("om_") and created.data.chat_id == "oc_ops"

    done = v2_card("Confirmed", buttons=False)
    patched = await sdk(client.im.v1.message.patch, patch_request(message_id, card_content(done)))
    assert patched.success(), patched.msg

    reply = (
        ReplyMessageRequest.builder()
        .message_id(message_id)
        .request_body(
            ReplyMessageRequestBody.builder()
            .msg_type("text")
            .content(json.dumps({"text": "done"}))
            .build()
        )
        .build()
    )
    replied = await sdk(client.im.v1.message.reply, reply)
    assert replied.success() and replied.data.parent_id == message_id

    got = await sdk(
        client.im.v1.message.get, GetMessageRequest.builder().message_id(message_id).build()
    )
    assert got.success()
    [item] = got.data.items
    assert json.loads(item.body.content) == done
    assert item.updated is True and item.sender.sender_type == "app"

    _status, view = await sandbox.control("GET", f"/messages/{message_id}")
    assert [rev["source"] for rev in view["history"]] == ["create", "patch"]


async def test_uuid_dedupes_creates_for_one_hour(sandbox: Sandbox) -> None:
    client = lark_client(sandbox)
    first = await send_card(client, uuid="op-1-card")
    again = await send_card(client, uuid="op-1-card")
    assert first.data.message_id == again.data.message_id
    _status, listing = await sandbox.control("GET", "/chats/oc_ops/messages")
    assert len(listing["items"]) == 1
    await sandbox.control("POST", "/clock", {"advance_s": 3600})
    TokenManager.cache.cache.clear()  # our token is still valid, but keep the SDK honest
    later = await send_card(client, uuid="op-1-card")
    assert later.success() and later.data.message_id != first.data.message_id


async def test_five_messages_per_second_per_chat(sandbox: Sandbox) -> None:
    client = lark_client(sandbox)
    await sandbox.control("POST", "/clock", {"freeze": True})
    codes = [(await send_card(client)).code for _ in range(6)]
    assert codes == [0, 0, 0, 0, 0, 230020]
    await sandbox.control("POST", "/clock", {"advance_s": 1})
    assert (await send_card(client)).code == 0


async def test_patch_limits_rate_size_and_age(sandbox: Sandbox) -> None:
    client = lark_client(sandbox)
    message_id = (await send_card(client)).data.message_id
    await sandbox.control("POST", "/clock", {"freeze": True})
    content = card_content(v2_card("again"))
    codes = [
        (await sdk(client.im.v1.message.patch, patch_request(message_id, content))).code
        for _ in range(6)
    ]
    assert codes == [0, 0, 0, 0, 0, 230020]

    await sandbox.control("POST", "/clock", {"advance_s": 1})
    big = card_content(v2_card(pad=31 * 1024))
    assert (await sdk(client.im.v1.message.patch, patch_request(message_id, big))).code == 230025
    too_big_create = await send_card(client, v2_card(pad=31 * 1024))
    assert too_big_create.code == 230025

    await sandbox.control("POST", "/clock", {"advance_s": 14 * 86400 + 1})
    TokenManager.cache.cache.clear()  # the old token expired on the sandbox's clock
    old = await sdk(client.im.v1.message.patch, patch_request(message_id, content))
    assert old.code == 230031


async def test_a_2_0_card_cannot_become_1_0_and_only_cards_are_patched(sandbox: Sandbox) -> None:
    client = lark_client(sandbox)
    message_id = (await send_card(client)).data.message_id
    v1 = {
        "config": {"update_multi": True},
        "elements": [{"tag": "div", "text": {"tag": "plain_text", "content": "x"}}],
    }
    downgrade = await sdk(client.im.v1.message.patch, patch_request(message_id, card_content(v1)))
    assert downgrade.code == 230099 and "1.0" in downgrade.msg
    text = await sdk(
        client.im.v1.message.create,
        create_request("oc_ops", json.dumps({"text": "hi"}), msg_type="text"),
    )
    not_card = await sdk(
        client.im.v1.message.patch, patch_request(text.data.message_id, card_content(v2_card()))
    )
    assert not_card.code == 230001
    unknown = await sdk(
        client.im.v1.message.patch, patch_request("om_unknown", card_content(v2_card()))
    )
    assert unknown.code == 230001


async def test_only_the_sending_app_may_patch(sandbox: Sandbox) -> None:
    other = App("cli_other", "other-secret", "sandbox-tenant", "ek", "vt")
    sandbox.state.apps[other.app_id] = other
    sandbox.state.chats["oc_ops"].apps.append(other.app_id)
    message_id = (await send_card(lark_client(sandbox))).data.message_id
    stranger = lark_client(sandbox, other)
    refused = await sdk(
        stranger.im.v1.message.patch, patch_request(message_id, card_content(v2_card("x")))
    )
    assert refused.code == 230027


async def test_recipients_chat_membership_and_tenant(sandbox: Sandbox) -> None:
    client = lark_client(sandbox)
    text = json.dumps({"text": "hello"})
    direct = await sdk(
        client.im.v1.message.create,
        create_request("ou_alice", text, msg_type="text", id_type="open_id"),
    )
    assert direct.success() and direct.data.chat_id.startswith("oc_p2p_")
    foreign = await sdk(
        client.im.v1.message.create,
        create_request("ou_eve", text, msg_type="text", id_type="open_id"),
    )
    assert foreign.code == 230013
    missing = await sdk(
        client.im.v1.message.create, create_request("oc_missing", text, msg_type="text")
    )
    assert missing.code == 230001
    await sandbox.control(
        "POST", "/chats", {"chat_id": "oc_nobot", "name": "x", "members": ["ou_bob"], "apps": []}
    )
    outside = await sdk(
        client.im.v1.message.create, create_request("oc_nobot", text, msg_type="text")
    )
    assert outside.code == 230002
    bad_text = await sdk(
        client.im.v1.message.create, create_request("oc_ops", '{"txt": 1}', msg_type="text")
    )
    assert bad_text.code == 230001


async def test_invalid_and_expired_tokens_get_lark_token_errors(sandbox: Sandbox) -> None:
    client = lark_client(sandbox)
    TokenManager.cache.set(
        f"self_tenant_token:{DEFAULT_APP_ID}", "t-forged", int(time.time()) + 3600
    )
    forged = await send_card(client)
    assert forged.code == 99991663
    TokenManager.cache.cache.clear()
    assert (await send_card(client)).code == 0  # fetches a real token
    await sandbox.control("POST", "/clock", {"advance_s": 7201})
    expired = await send_card(client)  # the SDK still holds the token the sandbox expired
    assert expired.code == 99991663
    _status, body, _ = await sandbox.openapi("GET", "/im/v1/messages/om_x", "")
    assert body["code"] == 99991661


async def test_app_wide_rate_limit_answers_429_with_reset_header(sandbox: Sandbox) -> None:
    client = lark_client(sandbox)
    await sandbox.control("POST", "/clock", {"freeze": True})
    await sandbox.control("POST", "/faults", {"app_rate_limit_per_s": 2})
    assert [(await send_card(client)).code for _ in range(2)] == [0, 0]
    limited = await send_card(client)
    assert limited.code == 99991400
    assert limited.raw.status_code == 429
    assert limited.raw.headers.get("x-ogw-ratelimit-reset") == "1"


async def test_faults_fail_the_next_patches_then_recover_and_add_latency(sandbox: Sandbox) -> None:
    client = lark_client(sandbox)
    message_id = (await send_card(client)).data.message_id
    await sandbox.control("POST", "/faults", {"fail_next_patches": 2, "fail_patch_code": 230020})
    content = card_content(v2_card("x"))
    codes = [
        (await sdk(client.im.v1.message.patch, patch_request(message_id, content))).code
        for _ in range(3)
    ]
    assert codes == [230020, 230020, 0]
    await sandbox.control("POST", "/faults", {"latency_ms": 300})
    started = time.perf_counter()
    assert (await send_card(client)).code == 0
    assert time.perf_counter() - started >= 0.3


async def test_a_card_mentioning_an_open_id_unknown_to_the_app_is_refused(
    sandbox: Sandbox,
) -> None:
    """Lark rejects the whole card when an <at id=...> names nobody the app can see."""
    client = lark_client(sandbox)

    def mentioning(who: str) -> dict[str, Any]:
        card = v2_card()
        card["body"]["elements"].append(
            {"tag": "markdown", "content": "x", "i18n_content": {"zh_cn": f"<at id={who}></at>"}}
        )
        return card

    assert (await send_card(client, mentioning("ou_alice"))).code == 0
    assert (await send_card(client, mentioning("all"))).code == 0
    for stranger in ("ou_nobody", "ou_eve"):  # unknown, and a user of another tenant
        refused = await send_card(client, mentioning(stranger))
        assert refused.code == 230099 and stranger in refused.msg
    message_id = (await send_card(client)).data.message_id
    content = card_content(mentioning("ou_nobody"))
    patched = await sdk(client.im.v1.message.patch, patch_request(message_id, content))
    assert patched.code == 230099
    assert "ou_nobody" not in sandbox.state.messages[message_id].content


async def test_a_chats_history_lists_in_pages_oldest_first_for_a_bot_in_the_chat(
    sandbox: Sandbox,
) -> None:
    client = lark_client(sandbox)
    for n in range(3):
        text = json.dumps({"text": f"line {n}"})
        sent = await sdk(
            client.im.v1.message.create, create_request("oc_ops", text, msg_type="text")
        )
        assert sent.success(), sent.msg

    def page(**query: Any) -> Any:
        builder = ListMessageRequest.builder().container_id_type("chat").container_id("oc_ops")
        for name, value in query.items():
            builder = getattr(builder, name)(value)
        return builder.build()

    first = await sdk(client.im.v1.message.list, page(page_size=2))
    assert first.success() and first.data.has_more and first.data.page_token
    rest = await sdk(client.im.v1.message.list, page(page_size=2, page_token=first.data.page_token))
    assert rest.success() and not rest.data.has_more
    listed = [*first.data.items, *rest.data.items]
    texts = [json.loads(item.body.content)["text"] for item in listed]
    assert texts == ["line 0", "line 1", "line 2"]
    assert {(i.sender.sender_type, i.sender.id) for i in listed} == {("app", DEFAULT_APP_ID)}
    # the bot's own reader pages through the same history
    api = LarkApi(sandbox.app.app_id, sandbox.app.app_secret, sandbox.base_url)
    try:
        read = [item async for item in api.chat_history("oc_ops", page_size=2)]
    finally:
        await api.close()
    assert [i["message_id"] for i in read] == [i.message_id for i in listed]
    newest = await sdk(client.im.v1.message.list, page(page_size=1, sort_type="ByCreateTimeDesc"))
    assert json.loads(newest.data.items[0].body.content)["text"] == "line 2"
    later = await sdk(client.im.v1.message.list, page(start_time=str(int(time.time()) + 60)))
    assert later.success() and not later.data.items

    too_big = await sdk(client.im.v1.message.list, page(page_size=51))
    assert too_big.code == 99992402
    await sandbox.control(
        "POST", "/chats", {"chat_id": "oc_nobot", "name": "x", "members": ["ou_bob"], "apps": []}
    )
    outside = await sdk(
        client.im.v1.message.list,
        ListMessageRequest.builder().container_id_type("chat").container_id("oc_nobot").build(),
    )
    assert outside.code == 230002
