"""Clicks and claims: a click's writes as group-commit intents (the claim, a quorum's confirmation, the reject), their outcomes as values, exposure reservations and the clock's auto-send."""
