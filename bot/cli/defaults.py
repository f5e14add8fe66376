"""The names and defaults the parser shows, without importing what owns them.

`bot/config/profiles.py` defines the dev profile's token variable and data directory; the
parser needs only the two values, and importing the config package would load the kinds'
registry (SQLAlchemy, pydantic) for `--help`. tests/bot/cli/test_light_start.py holds
them equal.
"""

from __future__ import annotations

from pathlib import Path

DEV_TOKEN_ENV = "COUNTERSIGN_TOKEN"  # bot/config/profiles.py DEV_TOKEN_ENV
DEFAULT_DEV_DIR = Path("var/dev")  # bot/config/profiles.py DEFAULT_DEV_DIR
LANG_ENV = "COUNTERSIGN_LANG"
DEFAULT_MCP_PORT = 8765
