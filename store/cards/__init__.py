"""The card ledger: which version of an operation its card shows and which is due."""
