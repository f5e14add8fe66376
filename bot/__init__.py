"""The Lark-facing process: transport, ingress, HTTP API, health and the CLI."""
