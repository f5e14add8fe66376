"""After the claim: the execution ledger (attempts, outcomes, evidence), its schedule and its writes."""
