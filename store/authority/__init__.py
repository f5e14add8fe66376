"""The operation authority: the `Store`, an operation's envelope and digest, filing a proposal, its state changes and the read models it hands out."""
