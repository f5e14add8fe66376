"""A local Lark: the OpenAPI subset, long-connection and webhook push, a control API and a web UI.

The unmodified lark-oapi SDK talks to it. Where ../shared/reference/lark.md marks a Lark
behaviour UNCONFIRMED, the choice made here is documented in `bot/sandbox/README.md`.
"""
