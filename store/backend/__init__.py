"""The two backends: engines, opening a store, SQLite's hot reader, PG wake-ups, leases and insert-once."""
