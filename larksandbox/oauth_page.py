"""The sandbox's sign-in pages: the consent page (pick a user, Approve or Deny) and the error
page a refused authorize request gets instead of a redirect.

Plain server-rendered HTML, no script: a browser test drives it by the stable ids `#user`,
`#approve` and `#deny`. Every value from the request is escaped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape

from aiohttp import web

from larksandbox.entities import App, User

AUTHORIZE_PATH = "/open-apis/authen/v1/authorize"
# Nothing on these pages loads anything; they are not to be framed (clickjacking a consent).
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}
STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; background: #f2f3f5; margin: 0; }
main { max-width: 30rem; margin: 3rem auto; background: #fff; border-radius: 10px;
       padding: 1.5rem 1.75rem; box-shadow: 0 1px 4px rgba(0, 0, 0, .12); }
h1 { font-size: 1.25rem; margin: 0 0 1rem; }
code { font-size: .85em; word-break: break-all; }
label { display: block; margin: 1.25rem 0 .35rem; font-weight: 600; }
select { width: 100%; font: inherit; padding: .4rem; }
.buttons { display: flex; gap: .75rem; margin-top: 1.5rem; }
button { flex: 1; font: inherit; padding: .55rem; border-radius: 6px; border: 1px solid #c9cdd4;
         background: #fff; cursor: pointer; }
#approve { background: #3370ff; border-color: #3370ff; color: #fff; }
.error { color: #d83931; }
"""


def _page(title: str, body: str, status: int) -> web.Response:
    html = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · Lark sandbox</title><style>{STYLE}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )
    return web.Response(
        text=html, status=status, content_type="text/html", charset="utf-8", headers=HEADERS
    )


def consent_page(app: App, users: Iterable[User], params: Mapping[str, str]) -> web.Response:
    """The authorize page: every sandbox user to pick from; `params` go back as hidden fields."""
    hidden = "".join(
        f'<input type="hidden" name="{escape(name)}" value="{escape(value)}">'
        for name, value in params.items()
    )
    options = "".join(
        f'<option value="{escape(u.open_id)}">{escape(u.name)} · {escape(u.open_id)}'
        f" · {escape(u.tenant_key)}</option>"
        for u in users
    )
    scopes = params.get("scope", "").split()
    asked = (
        "<p>It asks for: " + ", ".join(f"<code>{escape(s)}</code>" for s in scopes) + "</p>"
        if scopes
        else "<p>It asks for your basic profile only.</p>"
    )
    body = (
        "<h1>Sign in with Lark (sandbox)</h1>"
        f'<p><strong id="app-name">{escape(app.name)}</strong> '
        f"(<code>{escape(app.app_id)}</code>) wants to know who you are.</p>{asked}"
        f'<p>Then your browser goes to <code id="redirect-uri">'
        f"{escape(params['redirect_uri'])}</code>.</p>"
        f'<form method="post" action="{AUTHORIZE_PATH}">{hidden}'
        '<label for="user">Sign in as</label>'
        f'<select id="user" name="user">{options}</select>'
        '<div class="buttons">'
        '<button id="deny" type="submit" name="decision" value="deny">Deny</button>'
        '<button id="approve" type="submit" name="decision" value="approve">Approve</button>'
        "</div></form>"
    )
    return _page(f"Authorize {app.name}", body, 200)


def error_page(code: int, message: str) -> web.Response:
    """A refused authorize request: said on the page, never sent to a redirect URI."""
    body = (
        "<h1>Sign-in failed</h1>"
        f'<p class="error" id="error">Error {code}: {escape(message)}</p>'
        "<p>The application's sign-in link is not valid. Nothing was sent to it.</p>"
    )
    return _page("Sign-in failed", body, 400)
