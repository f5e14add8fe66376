"""The bot process, one folder per part: `app/` the composition root, `lark/` the Lark adapter,
`ingress/` the card entry and the text listener, `decide/` a decision whatever its entry,
`api/` the HTTP surfaces, `agents/` the client and MCP, `cli/` the command line, `config/`."""
