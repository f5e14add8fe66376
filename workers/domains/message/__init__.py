"""message.send: operator-approved outbound messages to a counterparty chat."""
