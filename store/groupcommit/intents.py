"""What an intent is and how it runs: hand-written `Statement`s with their conditions
(`require_row`, `only_if`), the `Intent` that groups them in a `Lane`, and the step runner
every writer shares (`intent_steps`; `run_statements`, `run_on_connection`), raising
`ConditionNotMet` when a condition matched nothing. The writers' contract is `contract.py`."""

from __future__ import annotations

import enum
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, text

Row = dict[str, Any]
Results = tuple[list[Row], ...]  # one list of rows per statement of the intent


class Lane(enum.IntEnum):
    PEOPLE = 0  # answering a click or a text: someone is waiting
    BACKGROUND = 1  # executor steps, card marks, deliveries, leases


_lane: ContextVar[Lane] = ContextVar("countersign_write_lane", default=Lane.BACKGROUND)


@contextmanager
def answering_a_person() -> Iterator[None]:
    """Writes made inside this block (in this task) take the people lane."""
    token = _lane.set(Lane.PEOPLE)
    try:
        yield
    finally:
        _lane.reset(token)


def current_lane() -> Lane:
    return _lane.get()


@dataclass(frozen=True)
class Statement:
    """One hand-written SQL statement with `:name` parameters.

    `require_row`: the statement is a condition; if it returns no row (a conditional UPDATE
    that matched nothing) the intent stops, is rolled back and raises `ConditionNotMet`.
    `only_if`: (index of an earlier statement, whether it must have returned rows): the
    statement runs only then, else its result is `[]`. So one intent can branch (claim, or
    record the refusal) without a round trip back to its caller. `and_if`: a second such
    condition, both must hold.
    """

    sql: str
    params: Mapping[str, Any] = field(default_factory=dict)
    require_row: bool = False
    only_if: tuple[int, bool] | None = None
    and_if: tuple[int, bool] | None = None

    def conditions(self) -> tuple[tuple[int, bool], ...]:
        return tuple(each for each in (self.only_if, self.and_if) if each is not None)

    def runs_after(self, results: Sequence[Sequence[Row]]) -> bool:
        return all(bool(results[index]) == had_rows for index, had_rows in self.conditions())


@dataclass(frozen=True)
class Intent:
    statements: tuple[Statement, ...]
    lane: Lane = Lane.BACKGROUND

    def __post_init__(self) -> None:
        if not self.statements:
            raise ValueError("an intent needs at least one statement")
        for index, statement in enumerate(self.statements):
            if any(not 0 <= earlier < index for earlier, _ in statement.conditions()):
                raise ValueError(f"statement {index}: only_if must name an earlier statement")


def intent_steps(intent: Intent) -> Generator[Statement, list[Row], Results]:
    """The intent's statements to run, in order; send each one's rows back. Holds what
    `only_if` and `require_row` mean, for every runner (sync or async) alike."""
    results: list[list[Row]] = []
    for index, statement in enumerate(intent.statements):
        if not statement.runs_after(results):
            results.append([])
            continue
        rows = yield statement
        if statement.require_row and not rows:
            raise ConditionNotMet(index)
        results.append(rows)
    return tuple(results)


def needs_savepoint(intent: Intent) -> bool:
    """Whether the intent can stop after it wrote something: a condition past its first
    statement. (A failing statement is handled by running the batch again, isolated.)"""
    return any(statement.require_row for statement in intent.statements[1:])


def run_statements(intent: Intent, execute: Callable[[Statement], list[Row]]) -> Results:
    """The intent's statements through `execute` (one statement -> its rows)."""
    steps = intent_steps(intent)
    try:
        statement = next(steps)
        while True:
            statement = steps.send(execute(statement))
    except StopIteration as done:
        results: Results = done.value
        return results


def run_on_connection(conn: Connection, intent: Intent) -> Results:
    """The intent's statements on a SQLAlchemy connection, inside a `Work` or `transact`
    write: a rare path that needs Python between its reads and an intent's writes (a
    reservation, then its refusal)."""

    def execute(statement: Statement) -> list[Row]:
        found = conn.execute(text(statement.sql), dict(statement.params))
        return [dict(row) for row in found.mappings()] if found.returns_rows else []

    return run_statements(intent, execute)


class ConditionNotMet(LookupError):
    """A `require_row` statement matched nothing; the intent changed nothing."""

    def __init__(self, index: int) -> None:
        super().__init__(f"statement {index} of the intent matched no row; nothing was written")
        self.index = index
