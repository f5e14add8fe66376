"""Lark's web sign-in in the sandbox, over real HTTP: the authorize page, the token endpoint and
user info, each refusal with Lark's code; the unmodified SDK where lark-oapi 1.7 has the call
(user_info, and the refresh grant through its device-flow client)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lark_oapi.channel.auth.device_flow import DeviceFlowClient  # type: ignore[import-untyped]

from larksandbox.entities import App
from larksandbox.state import SandboxState, default_state
from tests.support.lark_oauth import (
    REDIRECT,
    authorize_url,
    basic_auth,
    code_body,
    decide,
    exchange,
    open_page,
    pkce_pair,
    post_form,
    register_redirects,
    sdk_user_info,
    serving,
    sign_in,
    user_info,
)
from tests.support.sandbox import Sandbox

ALL_USERS = ["ou_alice", "ou_bob", "ou_carol", "ou_mallory", "ou_eve"]


async def freeze_clock(sandbox: Sandbox) -> None:
    """Exact seconds: a code's five minutes must not depend on how fast the test runs."""
    status, _ = await sandbox.control("POST", "/clock", {"freeze": True})
    assert status == 200


async def advance(sandbox: Sandbox, seconds: float) -> None:
    status, _ = await sandbox.control("POST", "/clock", {"advance_s": seconds})
    assert status == 200


def assert_refused(answer: tuple[int, dict[str, object], dict[str, str]], code: int) -> None:
    status, body, _headers = answer
    assert (status, body["code"]) == (400, code), body
    assert isinstance(body["error"], str) and isinstance(body["error_description"], str), body
    assert "access_token" not in body


async def test_the_chosen_user_signs_in_and_user_info_names_them_through_the_sdk(
    sandbox: Sandbox,
) -> None:
    await register_redirects(sandbox, REDIRECT)
    page = await open_page(sandbox, authorize_url(sandbox, state="st-42", scope="contact:x"))
    assert page.status == 200 and page.headers["Content-Type"].startswith("text/html")
    assert page.form.users == ALL_USERS  # every user of the sandbox, other tenants too
    assert {"user", "approve", "deny"} <= page.form.ids
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]

    sent = await decide(page, sandbox, "ou_carol")
    assert sent.status == 302 and sent.location is not None
    assert sent.location.startswith(f"{REDIRECT}?")
    assert set(sent.params) == {"code", "state"} and sent.params["state"] == "st-42"
    assert re.fullmatch(r"[A-Za-z0-9_-]{64,}", sent.params["code"])  # Lark's code alphabet

    status, body, headers = await exchange(sandbox, code_body(sandbox, sent.params["code"]))
    assert status == 200, body
    assert set(body) == {"code", "access_token", "expires_in", "scope", "token_type"}
    assert (body["code"], body["expires_in"], body["token_type"]) == (0, 7200, "Bearer")
    assert body["scope"] == "contact:x"
    assert headers["Cache-Control"] == "no-store"

    answer = await sdk_user_info(sandbox.base_url, body["access_token"])
    assert answer.success(), (answer.code, answer.msg)
    carol = sandbox.state.users["ou_carol"]
    assert (answer.data.open_id, answer.data.name, answer.data.tenant_key) == (
        "ou_carol",
        "Carol",
        "sandbox-tenant",
    )
    assert (answer.data.union_id, answer.data.user_id) == (carol.union_id, carol.user_id)


async def test_a_user_of_another_tenant_signs_in_with_their_tenant_key(sandbox: Sandbox) -> None:
    await register_redirects(sandbox, REDIRECT)
    params = await sign_in(sandbox, "ou_eve")
    _status, body, _ = await exchange(sandbox, code_body(sandbox, params["code"]))
    status, info = await user_info(sandbox, body["access_token"])
    assert (status, info["code"], info["msg"]) == (200, 0, "success")
    assert (info["data"]["open_id"], info["data"]["tenant_key"]) == ("ou_eve", "other-tenant")


async def test_deny_sends_access_denied_and_the_state_and_issues_no_code(sandbox: Sandbox) -> None:
    await register_redirects(sandbox, REDIRECT)
    page = await open_page(sandbox, authorize_url(sandbox, state="st-7"))
    sent = await decide(page, sandbox, "ou_alice", "deny")
    assert sent.status == 302 and sent.location is not None
    assert sent.location.startswith(f"{REDIRECT}?")
    assert sent.params == {"error": "access_denied", "state": "st-7"}
    assert sandbox.state.oauth.codes == {}


async def test_state_comes_back_only_when_given_and_a_fragment_stays_last(
    sandbox: Sandbox,
) -> None:
    target = "http://127.0.0.1:8080/cb?tab=1#/login"
    await register_redirects(sandbox, target)
    page = await open_page(sandbox, authorize_url(sandbox, redirect_uri=target))
    sent = await decide(page, sandbox, "ou_bob")
    assert sent.location is not None
    assert re.fullmatch(r"http://127\.0\.0\.1:8080/cb\?tab=1&code=[\w-]+#/login", sent.location)


async def test_the_page_escapes_what_the_link_carries_and_the_state_comes_back_as_given(
    sandbox: Sandbox,
) -> None:
    await register_redirects(sandbox, REDIRECT)
    state = '"><script>alert(1)</script>&code=forged'
    page = await open_page(sandbox, authorize_url(sandbox, state=state, scope="<b>x</b>"))
    assert "<script>" not in page.html and "<b>" not in page.html
    assert page.form.hidden["state"] == state
    sent = await decide(page, sandbox, "ou_alice")
    assert sent.params["state"] == state and sent.params["code"] != "forged"


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"client_id": "cli_0000000000000000"}, 20048),
        ({"client_id": ""}, 20001),
        ({"redirect_uri": "https://evil.example/cb"}, 20029),
        ({"redirect_uri": f"{REDIRECT}/"}, 20029),  # matched exactly
        ({"redirect_uri": ""}, 20001),
        ({"response_type": "token"}, 20063),
        ({"code_challenge": "abc", "code_challenge_method": "S512"}, 20063),
    ],
)
async def test_a_refused_authorize_request_gets_a_page_and_is_never_redirected(
    sandbox: Sandbox, params: dict[str, str], code: int
) -> None:
    await register_redirects(sandbox, REDIRECT)
    page = await open_page(sandbox, authorize_url(sandbox, state="st", **params))
    assert page.status == 400 and "Location" not in page.headers
    assert page.headers["Content-Type"].startswith("text/html")
    assert f"Error {code}:" in page.html and "approve" not in page.form.ids


async def test_the_consent_form_is_checked_again_when_posted(sandbox: Sandbox) -> None:
    """The hidden fields are the browser's to change: a forged post is refused the same way."""
    await register_redirects(sandbox, REDIRECT)
    page = await open_page(sandbox, authorize_url(sandbox, state="st"))
    fields = {**page.form.hidden, "user": "ou_alice", "decision": "approve"}
    for forged, code in [
        ({"redirect_uri": "https://evil.example/cb"}, 20029),
        ({"client_id": "cli_0000000000000000"}, 20048),
        ({"user": "ou_nobody"}, 20008),
        ({"decision": "maybe"}, 20063),
    ]:
        sent = await post_form(sandbox, page.form.action, {**fields, **forged})
        assert (sent.status, sent.location) == (400, None), forged
        assert f"Error {code}:" in sent.html
    assert sandbox.state.oauth.codes == {}


async def test_a_code_is_used_once_and_an_unknown_one_is_not_found(sandbox: Sandbox) -> None:
    await register_redirects(sandbox, REDIRECT)
    code = (await sign_in(sandbox, "ou_alice"))["code"]
    assert (await exchange(sandbox, code_body(sandbox, code)))[0] == 200
    assert_refused(await exchange(sandbox, code_body(sandbox, code)), 20065)
    assert_refused(await exchange(sandbox, code_body(sandbox, "not-a-code")), 20003)


async def test_a_code_lives_five_minutes_on_the_sandbox_clock(sandbox: Sandbox) -> None:
    await register_redirects(sandbox, REDIRECT)
    await freeze_clock(sandbox)
    first = (await sign_in(sandbox, "ou_alice"))["code"]
    second = (await sign_in(sandbox, "ou_alice"))["code"]
    await advance(sandbox, 299)
    assert (await exchange(sandbox, code_body(sandbox, first)))[0] == 200
    await advance(sandbox, 1)
    answer = await exchange(sandbox, code_body(sandbox, second))
    assert_refused(answer, 20004)
    assert answer[1]["error"] == "invalid_grant"


async def test_the_token_step_checks_client_grant_and_redirect_and_a_refusal_keeps_the_code(
    sandbox: Sandbox,
) -> None:
    await register_redirects(sandbox, REDIRECT)
    other = App("cli_0123456789abcdef", "other-secret", "sandbox-tenant", "e", "v")
    sandbox.state.apps[other.app_id] = other
    code = (await sign_in(sandbox, "ou_alice"))["code"]
    app = sandbox.app
    for body, expected in [
        (code_body(sandbox, code, client_secret="wrong"), 20002),
        (code_body(sandbox, code, client_id="cli_0000000000000000"), 20048),
        (code_body(sandbox, code, client_id=other.app_id, client_secret="other-secret"), 20024),
        (code_body(sandbox, code, redirect_uri=f"{REDIRECT}/other"), 20071),
        (code_body(sandbox, code, code=None), 20001),
        (code_body(sandbox, code, client_secret=None), 20001),
        (code_body(sandbox, code, grant_type=None), 20001),
        (code_body(sandbox, code, grant_type="password"), 20036),
        (code_body(sandbox, code, code=12345), 20063),
    ]:
        assert_refused(await exchange(sandbox, body), expected)
    assert_refused(await exchange(sandbox, "not json"), 20063)
    assert_refused(await exchange(sandbox, '["a list"]'), 20063)
    both = basic_auth(app.app_id, app.app_secret)
    assert_refused(await exchange(sandbox, code_body(sandbox, code), basic=both), 20070)
    bad_basic = basic_auth(app.app_id, "wrong")
    assert_refused(
        await exchange(sandbox, code_body(sandbox, code, client_secret=None), basic=bad_basic),
        20002,
    )
    # The code survived every refusal; HTTP Basic and a form-encoded body work (RFC 6749 as a
    # standard OAuth client library sends it); redirect_uri may be left out (optional in Lark's
    # table).
    body = code_body(sandbox, code, client_id=None, client_secret=None, redirect_uri=None)
    status, granted, _ = await exchange(sandbox, body, form=True, basic=both)
    assert (status, granted["code"]) == (200, 0), granted


async def test_pkce_s256_and_plain(sandbox: Sandbox) -> None:
    await register_redirects(sandbox, REDIRECT)
    verifier, challenge = pkce_pair()
    code = (
        await sign_in(sandbox, "ou_bob", code_challenge=challenge, code_challenge_method="S256")
    )["code"]
    assert_refused(await exchange(sandbox, code_body(sandbox, code)), 20049)
    assert_refused(
        await exchange(sandbox, code_body(sandbox, code, code_verifier=pkce_pair()[0])), 20049
    )
    assert_refused(
        await exchange(sandbox, code_body(sandbox, code, code_verifier=challenge)), 20049
    )
    ok = await exchange(sandbox, code_body(sandbox, code, code_verifier=verifier))
    assert ok[0] == 200, ok[1]
    # plain is Lark's default method: the challenge is the verifier itself
    plain = (await sign_in(sandbox, "ou_bob", code_challenge=verifier))["code"]
    ok = await exchange(sandbox, code_body(sandbox, plain, code_verifier=verifier))
    assert ok[0] == 200, ok[1]


async def test_scope_narrowing_at_the_token_step(sandbox: Sandbox) -> None:
    await register_redirects(sandbox, REDIRECT)
    code = (await sign_in(sandbox, "ou_alice", scope="offline_access contact:a contact:b"))["code"]
    assert_refused(
        await exchange(sandbox, code_body(sandbox, code, scope="contact:a contact:a")), 20067
    )
    assert_refused(await exchange(sandbox, code_body(sandbox, code, scope="contact:c")), 20068)
    status, body, _ = await exchange(sandbox, code_body(sandbox, code, scope="contact:b"))
    assert (status, body["scope"]) == (200, "contact:b")
    assert "refresh_token" not in body  # offline_access was narrowed away


async def test_refresh_with_offline_access_through_the_sdks_device_flow_client(
    sandbox: Sandbox,
) -> None:
    await register_redirects(sandbox, REDIRECT)
    await freeze_clock(sandbox)
    code = (await sign_in(sandbox, "ou_alice", scope="offline_access contact:a"))["code"]
    status, first, _ = await exchange(sandbox, code_body(sandbox, code))
    assert status == 200 and first["refresh_token_expires_in"] == 604800, first
    assert first["scope"] == "offline_access contact:a"

    app = sandbox.app
    client = DeviceFlowClient(app.app_id, app.app_secret, domain=sandbox.base_url)
    try:
        renewed = await client.refresh(first["refresh_token"])
    finally:
        await client.close()
    assert renewed.access_token not in ("", first["access_token"])
    assert renewed.refresh_token not in (None, first["refresh_token"])
    assert renewed.scopes == ["offline_access", "contact:a"]
    for token in (renewed.access_token, first["access_token"]):  # the old one lives on
        assert (await user_info(sandbox, token))[1]["data"]["open_id"] == "ou_alice"

    refresh = {
        "grant_type": "refresh_token",
        "client_id": app.app_id,
        "client_secret": app.app_secret,
    }
    used = {**refresh, "refresh_token": first["refresh_token"]}
    assert_refused(await exchange(sandbox, used), 20073)
    assert_refused(await exchange(sandbox, {**refresh, "refresh_token": "nope"}), 20026)
    await advance(sandbox, 604800)
    expired = {**refresh, "refresh_token": renewed.refresh_token}
    assert_refused(await exchange(sandbox, expired), 20037)


async def test_user_info_refuses_a_missing_unknown_app_or_expired_token(sandbox: Sandbox) -> None:
    await register_redirects(sandbox, REDIRECT)
    await freeze_clock(sandbox)
    code = (await sign_in(sandbox, "ou_alice"))["code"]
    token = (await exchange(sandbox, code_body(sandbox, code)))[1]["access_token"]

    status, body = await user_info(sandbox, None)
    assert (status, body["code"]) == (400, 99991661)
    for bad in ("not-a-token", await sandbox.token()):  # an app's tenant token is not a user's
        status, body = await user_info(sandbox, bad)
        assert (status, body["code"]) == (200, 20005), body
    await advance(sandbox, 7199)
    assert (await sdk_user_info(sandbox.base_url, token)).success()
    await advance(sandbox, 1)
    expired = await sdk_user_info(sandbox.base_url, token)
    assert not expired.success() and expired.code == 20005
    assert expired.msg == "The user access token passed is invalid. Please check the value"


async def test_the_control_api_sets_redirect_urls_and_lists_tokens(sandbox: Sandbox) -> None:
    path = f"/apps/{sandbox.app.app_id}"
    for bad in ["https://x.example/cb", ["ftp://x.example/cb"], ["/relative"], [3]]:
        status, body = await sandbox.control("PATCH", path, {"redirect_urls": bad})
        assert (status, body["error"]["code"]) == (422, "invalid_redirect_urls"), bad
    assert sandbox.app.redirect_urls == []
    await register_redirects(sandbox, REDIRECT, REDIRECT)
    status, apps = await sandbox.control("GET", "/apps")
    assert apps["items"][0]["redirect_urls"] == [REDIRECT]

    await freeze_clock(sandbox)
    code = (await sign_in(sandbox, "ou_bob"))["code"]
    token = (await exchange(sandbox, code_body(sandbox, code)))[1]["access_token"]
    status, listed = await sandbox.control("GET", "/oauth/tokens")
    assert status == 200 and listed["refresh_tokens"] == []
    [item] = listed["items"]
    assert (item["token"], item["open_id"], item["expired"]) == (token, "ou_bob", False)
    await advance(sandbox, 7200)
    assert (await sandbox.control("GET", "/oauth/tokens"))[1]["items"][0]["expired"] is True


async def test_grants_and_redirect_urls_survive_a_restart_from_the_state_file(
    tmp_path: Path,
) -> None:
    state_file = tmp_path / "sandbox.json"
    async with serving(default_state(), state_file) as first:
        await register_redirects(first, REDIRECT)
        code = (await sign_in(first, "ou_alice", scope="offline_access"))["code"]
        status, granted, _ = await exchange(first, code_body(first, code))
        assert status == 200
    # saved at shutdown, as `countersign sandbox --state` does; a fresh sandbox loads it
    async with serving(SandboxState.load(state_file)) as restarted:
        assert restarted.app.redirect_urls == [REDIRECT]
        status, info = await user_info(restarted, granted["access_token"])
        assert info["data"]["open_id"] == "ou_alice"
        assert_refused(await exchange(restarted, code_body(restarted, code)), 20065)
        refresh = {
            "grant_type": "refresh_token",
            "client_id": restarted.app.app_id,
            "client_secret": restarted.app.app_secret,
            "refresh_token": granted["refresh_token"],
        }
        assert (await exchange(restarted, refresh))[0] == 200
