"""due work notifies: PostgreSQL triggers wake every replica's matching worker

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04 10:00:00

When a row falls due for a worker (an operation's `exec_due_at` or `card_due_at`, a result
delivery's `due_at`, set to now), the transaction that sets it calls
`pg_notify('countersign_due', '<schema>.<worker>')`: PostgreSQL delivers it at COMMIT (never
for a rolled-back change) and sends equal notifications of one transaction once, so a batch
of claims is one wake-up per worker kind. `store.backend.due_listener.DueListener` hears it in every
replica. The schema is in the payload because the channel spans the database, and several
deployments (or test sessions) may share one database, each in its own schema.

"Now" is the database's `clock_timestamp()` (not the transaction's start, which may precede
the due time a writer computed inside it) plus a second for clocks that differ between the
bot's host and the database's; a lease (due moved tens of seconds ahead) never notifies.
SQLite has no other process to wake: nothing changes there.
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# Frozen here: a migration does the same thing tomorrow.
CHANNEL = "countersign_due"
DUE_NOW = "clock_timestamp() + interval '1 second'"


def _due_now(column: str) -> str:
    """Set to a time that is now, by an INSERT or by an UPDATE that changed it."""
    return (
        f"NEW.{column} IS NOT NULL AND NEW.{column} <= {DUE_NOW} "
        f"AND (TG_OP = 'INSERT' OR NEW.{column} IS DISTINCT FROM OLD.{column})"
    )


def _notify(worker: str) -> str:
    return f"PERFORM pg_notify('{CHANNEL}', TG_TABLE_SCHEMA || '.{worker}');"


# table -> (function, {due column: worker})
TRIGGERS: dict[str, tuple[str, dict[str, str]]] = {
    "operations": (
        "countersign_operation_due",
        {"exec_due_at": "executor", "card_due_at": "cards"},
    ),
    "deliveries": ("countersign_delivery_due", {"due_at": "deliveries"}),
}


def _function_sql(function: str, columns: dict[str, str]) -> str:
    checks = "\n".join(
        f"  IF {_due_now(column)} THEN\n    {_notify(worker)}\n  END IF;"
        for column, worker in columns.items()
    )
    return (
        f"CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"BEGIN\n{checks}\n  RETURN NULL;\nEND\n$$"
    )


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, (function, columns) in TRIGGERS.items():
        op.execute(_function_sql(function, columns))
        op.execute(
            f"CREATE TRIGGER {function} AFTER INSERT OR UPDATE OF {', '.join(columns)} "
            f"ON {table} FOR EACH ROW EXECUTE FUNCTION {function}()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, (function, _columns) in TRIGGERS.items():
        op.execute(f"DROP TRIGGER IF EXISTS {function} ON {table}")
        op.execute(f"DROP FUNCTION IF EXISTS {function}()")
