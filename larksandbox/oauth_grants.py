"""What Lark's web sign-in hands out: authorization codes, user access tokens and refresh
tokens, with their lifetimes, single use and PKCE; saved with the rest of the sandbox state.

Times are seconds on the sandbox clock (`SandboxState.now_s()`), so a test ages a code or a
token by advancing that clock. The HTTP side is in larksandbox/oauth.py.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from dataclasses import asdict, dataclass, field
from typing import Any

# Lark's documented lifetimes (docs: obtain-oauth-code, get-user-access-token): a code lives
# 5 minutes and is used once; the token examples give 7200 s and 604800 s ("not fixed").
CODE_TTL_S = 300
USER_TOKEN_TTL_S = 7200
REFRESH_TOKEN_TTL_S = 604800
# Expired grants are kept this long so a late use still gets "expired", not "not found",
# and then dropped so a long-running sandbox's state file stays bounded (sandbox's choice).
KEEP_EXPIRED_S = 86400
# Only a grant with this scope carries a refresh token (get-user-access-token).
OFFLINE_ACCESS = "offline_access"
# RFC 7636 §4.1, and Lark's code_verifier rule: 43 to 128 of these characters.
CODE_VERIFIER = re.compile(r"^[A-Za-z0-9._~-]{43,128}$")
PKCE_METHODS = ("S256", "plain")


def split_scope(scope: str) -> list[str]:
    """Scopes as given, space separated, in order."""
    return scope.split()


def joined_scope(scopes: list[str]) -> str:
    """Scopes without repeats, in the order first given."""
    return " ".join(dict.fromkeys(scopes))


def pkce_matches(method: str, challenge: str, verifier: str) -> bool:
    if not CODE_VERIFIER.match(verifier):
        return False
    if method == "S256":
        digest = hashlib.sha256(verifier.encode("ascii")).digest()
        expected = base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
    else:
        expected = verifier
    return secrets.compare_digest(expected, challenge)


@dataclass
class AuthCode:
    code: str
    app_id: str
    open_id: str
    redirect_uri: str
    scope: str
    issued_at: float
    expires_at: float
    code_challenge: str = ""
    code_challenge_method: str = ""
    used: bool = False


@dataclass
class UserToken:
    token: str
    app_id: str
    open_id: str
    scope: str
    issued_at: float
    expires_at: float
    # how the token request's body came: "json" (as Lark documents it) or "form"
    body_type: str = "json"


@dataclass
class RefreshToken:
    token: str
    app_id: str
    open_id: str
    scope: str  # everything the user granted: narrowing one access token does not stick
    issued_at: float
    expires_at: float
    used: bool = False


@dataclass
class OAuthGrants:
    codes: dict[str, AuthCode] = field(default_factory=dict)
    tokens: dict[str, UserToken] = field(default_factory=dict)
    refresh_tokens: dict[str, RefreshToken] = field(default_factory=dict)

    def issue_code(
        self,
        app_id: str,
        open_id: str,
        redirect_uri: str,
        scope: str,
        now: float,
        code_challenge: str = "",
        code_challenge_method: str = "",
    ) -> AuthCode:
        self.prune(now)
        code = AuthCode(
            # Lark: [A-Za-z0-9_-], at least 64 characters to be reserved
            code=secrets.token_urlsafe(48),
            app_id=app_id,
            open_id=open_id,
            redirect_uri=redirect_uri,
            scope=scope,
            issued_at=now,
            expires_at=now + CODE_TTL_S,
            code_challenge=code_challenge,
            code_challenge_method=code_challenge_method,
        )
        self.codes[code.code] = code
        return code

    def issue_tokens(
        self, app_id: str, open_id: str, granted: str, scope: str, now: float, body_type: str
    ) -> tuple[UserToken, RefreshToken | None]:
        """An access token for `scope` (the granted scope, or a narrowing of it); a refresh
        token, keeping all of `granted`, only when `scope` holds offline_access."""
        self.prune(now)
        token = UserToken(
            secrets.token_urlsafe(64),
            app_id,
            open_id,
            scope,
            now,
            now + USER_TOKEN_TTL_S,
            body_type,
        )
        self.tokens[token.token] = token
        refresh = None
        if OFFLINE_ACCESS in split_scope(scope):
            refresh = RefreshToken(
                secrets.token_urlsafe(64), app_id, open_id, granted, now, now + REFRESH_TOKEN_TTL_S
            )
            self.refresh_tokens[refresh.token] = refresh
        return token, refresh

    def user_token(self, token: str, now: float) -> UserToken | None:
        found = self.tokens.get(token)
        return found if found is not None and found.expires_at > now else None

    def prune(self, now: float) -> None:
        for grants in (self.codes, self.tokens, self.refresh_tokens):
            for key in [k for k, g in grants.items() if g.expires_at + KEEP_EXPIRED_S <= now]:
                del grants[key]

    # -- persistence ------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return {
            "codes": [asdict(c) for c in self.codes.values()],
            "tokens": [asdict(t) for t in self.tokens.values()],
            "refresh_tokens": [asdict(r) for r in self.refresh_tokens.values()],
        }

    @classmethod
    def load(cls, data: dict[str, Any]) -> OAuthGrants:
        grants = cls()
        for item in data.get("codes", []):
            grants.codes[item["code"]] = AuthCode(**item)
        for item in data.get("tokens", []):
            grants.tokens[item["token"]] = UserToken(**item)
        for item in data.get("refresh_tokens", []):
            grants.refresh_tokens[item["token"]] = RefreshToken(**item)
        return grants
