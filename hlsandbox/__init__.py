"""A local Hyperliquid: `POST /info`, `POST /exchange` and a control API, for the unmodified SDK.

The official `hyperliquid-python-sdk` talks to it as to the venue (its signatures are
verified with the SDK's own verifier). It imports nothing of bot/cards/store/workers:
Hyperliquid knows nothing of countersign. The surface is documented in hlsandbox/README.md:

* serve: `build_app(Venue(...))` is an aiohttp application (`countersign hl-sandbox`);
* tests: `hlsandbox.testing.start(port)` -> `RunningSandbox` (control API client plus the
  in-process `Venue`), `HlSandboxClient(base_url)` for a sandbox in another process;
* universe: `demo_seed()`, `load_seed(path)`, `Asset`.
"""

from hlsandbox.app import build_app
from hlsandbox.state import Venue
from hlsandbox.universe import Asset, Seed, demo_seed, load_seed

__all__ = ["Asset", "Seed", "Venue", "build_app", "demo_seed", "load_seed"]
