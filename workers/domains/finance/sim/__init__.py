"""The simulated venue: the adapter the finance executor submits to and reconciles against.

SIMULATED: nothing here reaches a real exchange (docs/architecture.md §1, principle 7). The
package is split along its seams: `model` (instruments, orders, fills, observations as
data), `rows` (the stored records), `decimals` (exact arithmetic, plain notation),
`errors`, `faults` (fault settings and what each fault decides), the pure venue rules in
`rules` and `matching` (over a `book.Book`, answering with write events), the venue's own
SQLite file in `store` and `tables`, `transactions` (one store transaction per venue call:
load, match, write, answer), `venue` (`SimVenue`, the async adapter) and `listing`
(`countersign venue orders`). Import from the module that owns a name; this package
re-exports nothing.
"""
