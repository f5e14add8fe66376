"""The agent surfaces: the typed Python client of the HTTP API, the MCP server over it, and the registered kinds as agents read them."""
