"""Our Lark transports against Lark's side: the real sandbox (`sandbox`, and `world` for the
long connection) and our webhook routes on a loopback port (`app`, `port`, `serve`, `pusher`,
`http`)."""

from tests.support.sandbox import sandbox  # noqa: F401  (fixture)
from tests.support.webhook_routes import app, http, port, pusher, serve  # noqa: F401  (fixtures)
from tests.support.ws_world import world  # noqa: F401  (fixture)
