"""`countersign mcp`: the agent's front door, an MCP server over the proposers' HTTP API."""
