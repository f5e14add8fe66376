"""The bot process, one folder per part: `app/` the composition root, `lark/` the Lark adapter,
`ingress/` the card entry and the text listener, `decide/` a decision whatever its entry,
`api/` the HTTP surfaces, `agents/` the client and MCP, `cli/` the command line, `config/`."""

# The distribution's version (pyproject.toml reads it from here): `countersign --version`
# prints it without importlib.metadata, whose import costs more than the whole parser.
__version__ = "0.1.0"

# Before any module of the bot imports lark-oapi (bot/api/signin.py is imported before
# bot/lark/): the SDK's umbrella packages defer their `__init__`, so each process loads the
# namespaces it uses, not all of them (bot/lark/namespaces.py).
from bot.lark.namespaces import install as _defer_lark_namespaces

_defer_lark_namespaces()
