"""Executors, reconciler, card delivery and expiry workers, and the operation domains."""
