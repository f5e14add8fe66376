"""finance.order: orders on a (simulated) venue."""
