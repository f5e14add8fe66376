"""The click walk and the proposal walk, measured: which of our files a click and a proposal
pass through, in the order the real stack calls them (issue 33's acceptance figures).

The real stack, as bench/callback_ack.py builds it: the sandbox in its own process,
`bot.app.server.serve` in this one (lark ws, SQLite in a temporary directory, workers inline so
the executor and card worker are seen). Each repetition proposes one order through the HTTP
API and clicks Confirm on its card through the sandbox's control API; three walks:

* click: from `CallbackConsumer.on_callback`'s entry until it returns the answer;
* proposal, first half: from the HTTP handler of POST /api/v1/operations until the card's
  message id is on the operation's row (the card posted and recorded);
* proposal, second half: from `on_callback` (the Confirm) until the operation's
  `execution_state` is `completed` (the outcome recorded by the executor); the whole walk is
  the two halves end to end.

A call of the walk (`sys.setprofile`; `threading.setprofile` for the group-commit writer):
a function entered (not a coroutine resumed) in bot/, cards/, store/, workers/ or kernel/
under --root, while recording, and
* in the main thread: only in the walk's asyncio tasks: the one running the entry, every task
  a walk task creates or wakes (a `loop.call_soon` of a task's step or wake-up, or of a
  callback scheduled by a walk task, while a walk task runs), transitively. A worker woken
  by the walk (the card worker, the executor) belongs to it from then on; tasks woken by
  their own timer (other polls, the venue clock) do not;
* in the SQLite group-commit writer's thread (its name has "group-commit"): every call while
  recording; the stack is idle, so its batches are the walk's.
The lark-oapi thread is not recorded: it hands the callback over before `on_callback` and
sends the answer after it. Polls are made rare (card and executor looks hourly, the expiry
sweep each minute); each walk starts with no card due and nothing to execute, after one
unrecorded warm-up walk (lazy imports, caches).

Figures per walk: calls, stays (a maximal run of consecutive calls in one file), distinct
files and packages (top-level folder), package transitions between consecutive stays,
returns (entering a package the walk had already left; returns* the same with calls into the
kernel left out, as a call into the standard library is) and store->bot climbs. With
`--repeat N` the table gives the median [range]; stays are printed for the first repetition.

    .venv/bin/python bench/walk.py [--root DIR] [--repeat 3] [--json]

Limits: the end of a window is seen by polling the SQLite file every millisecond, so up to
about a millisecond of the walk's tasks' next calls can be in it; the order of calls across
the walk's tasks and the writer thread is the order they ran in, which scheduling may vary
(hence the repeats); C functions, and functions of libraries, are not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import dis
import itertools
import json
import logging
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

# --root is read before any of our packages is imported: it decides where they come from
_EARLY = argparse.ArgumentParser(add_help=False)
_EARLY.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
ROOT = Path(_EARLY.parse_known_args()[0].root).resolve()
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "bench"))  # the harness of the tree measured

import aiohttp  # noqa: E402
import callback_ack as harness  # noqa: E402
from sandbox_process import SandboxProcess  # noqa: E402

import bot.api.proposals  # noqa: E402
import bot.ingress.callbacks  # noqa: E402

try:
    from bot.app.server import serve
except ImportError:  # an older --root, before bot/app/
    from bot.server import serve  # type: ignore[import-not-found,no-redef]
from bot.config import parse, resolve  # noqa: E402

PACKAGES = ("bot", "cards", "store", "workers", "kernel")
WRITER_THREAD = "group-commit"
END_POLL_S = 0.001
END_DEADLINE_S = 60.0
QUIET_S = 0.5  # after the backlog is empty, so the last kicked passes have gone back to sleep
RESUME = dis.opmap["RESUME"]
YIELD_VALUE = dis.opmap["YIELD_VALUE"]
Call = tuple[str, str]  # file relative to --root, function name


class Recorder:
    """The profile functions and the task bookkeeping of one recording window."""

    def __init__(self, root: Path) -> None:
        self.prefix = str(root) + os.sep
        self.files: dict[str, str | None] = {}
        self.entry: CodeType | None = None
        self.entry_frame: FrameType | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.active, self.in_walk_callback = False, 0
        self.calls: list[Call] = []
        self.answered: int | None = None  # calls before the entry returned
        self.tasks: set[asyncio.Task[Any]] = set()

    def ours(self, code: CodeType) -> str | None:
        name = code.co_filename
        if name not in self.files:
            rel = name[len(self.prefix) :] if name.startswith(self.prefix) else None
            ok = rel is not None and rel.split(os.sep, 1)[0] in PACKAGES
            self.files[name] = rel if ok else None
        return self.files[name]

    def fresh(self, frame: FrameType) -> bool:
        """Entered, not resumed: a resumed coroutine's RESUME has a non-zero argument."""
        raw, at = frame.f_code.co_code, frame.f_lasti
        return at < 0 or raw[at] != RESUME or raw[at + 1] == 0

    def in_walk(self) -> bool:
        return self.in_walk_callback > 0 or asyncio.current_task(self.loop) in self.tasks

    def on_main(self, frame: FrameType, event: str, _arg: Any) -> None:
        code = frame.f_code
        if event == "call":
            if not self.active:
                if code is not self.entry or not self.fresh(frame):
                    return
                self.active, self.entry_frame = True, frame
                task = asyncio.current_task(self.loop)
                if task is not None:
                    self.tasks.add(task)
            rel = self.ours(code)
            if rel is not None and self.in_walk() and self.fresh(frame):
                self.calls.append((rel, code.co_qualname))
        elif event == "return" and frame is self.entry_frame and self.answered is None:
            if frame.f_code.co_code[frame.f_lasti] != YIELD_VALUE:
                self.answered = len(self.calls)

    def on_thread(self, frame: FrameType, event: str, _arg: Any) -> None:
        if WRITER_THREAD not in threading.current_thread().name:
            sys.setprofile(None)  # no other thread is recorded; stop paying for it
            return
        rel = self.ours(frame.f_code) if event == "call" and self.active else None
        if rel is not None and self.fresh(frame):
            self.calls.append((rel, frame.f_code.co_qualname))

    def call_soon(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """The loop's call_soon, noting the tasks a walk task creates or wakes."""

        def traced(callback: Callable[..., Any], *args: Any, context: Any = None) -> Any:
            if self.active and self.in_walk():
                owner = getattr(callback, "__self__", None)
                if isinstance(owner, asyncio.Task):
                    self.tasks.add(owner)
                else:
                    callback = self.walking(callback)
            return original(callback, *args, context=context)

        return traced

    def walking(self, callback: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            self.in_walk_callback += 1
            try:
                return callback(*args)
            finally:
                self.in_walk_callback -= 1

        return run

    async def window(
        self, entry: CodeType, start: Callable[[], Any], done: Callable[[], bool]
    ) -> list[Call]:
        """Record from `entry`'s call until `done()`; `start()` sets the walk off."""
        loop = asyncio.get_running_loop()
        self.loop, self.entry, self.entry_frame = loop, entry, None
        self.active, self.calls, self.answered, self.tasks = False, [], None, set()
        # an instance attribute: C futures and tasks look call_soon up on the loop
        vars(loop)["call_soon"] = self.call_soon(loop.call_soon)
        sys.setprofile(self.on_main)
        try:
            kicked = asyncio.ensure_future(start())
            deadline = time.monotonic() + END_DEADLINE_S
            while not done():
                if time.monotonic() > deadline:
                    raise RuntimeError("the walk did not reach its end")
                await asyncio.sleep(END_POLL_S)
        finally:
            sys.setprofile(None)
            self.active = False
            del vars(loop)["call_soon"]
        await kicked
        return self.calls


# the bottom every package calls (kernel/ today; where its modules lived before it, for an
# older --root): returns* leaves their calls out
KERNEL_MODULES = ("timeutil", "logcontext", "problems", "canonical", "reasons")
LEAVES = ("kernel/", *(f"store/{name}.py" for name in KERNEL_MODULES))
FIELD = {"returns*": "returns_past_leaves", "store->bot": "store_to_bot"}


@dataclass(frozen=True)
class Figures:
    calls: int
    stays: int
    files: int
    packages: int
    returns: int
    returns_past_leaves: int
    store_to_bot: int
    transitions: dict[str, int]


def stays(calls: Sequence[Call]) -> list[tuple[str, int]]:
    """(file, calls in it) per stay."""
    return [(rel, len(list(run))) for rel, run in itertools.groupby(rel for rel, _ in calls)]


def package_returns(packages: Sequence[str]) -> int:
    """How often the walk enters a package it had already left."""
    moves = [(a, b) for a, b in itertools.pairwise(packages) if a != b]
    visited: set[str] = set(packages[:1])
    returns = 0
    for _before, after in moves:
        returns += after in visited
        visited.add(after)
    return returns


def figures(calls: Sequence[Call], leaves: Sequence[str] = LEAVES) -> Figures:
    """`leaves`: files (or folders, ending in /) whose calls `returns_past_leaves` leaves out,
    as a call into the standard library is: a clock read or a digest is not a wander."""
    runs = stays(calls)
    packages = [rel.split(os.sep, 1)[0] for rel, _n in runs]
    moves = [(a, b) for a, b in itertools.pairwise(packages) if a != b]
    trunk = [rel.split(os.sep, 1)[0] for rel, _n in runs if not rel.startswith(tuple(leaves))]
    transitions = Counter(f"{a}->{b}" for a, b in moves)
    files, climbs = len({rel for rel, _n in runs}), transitions.get("store->bot", 0)
    ordered = dict(sorted(transitions.items()))
    return Figures(
        len(calls),
        len(runs),
        files,
        len(set(packages)),
        package_returns(packages),
        package_returns(trunk),
        climbs,
        ordered,
    )


def compact(calls: Sequence[Call]) -> str:
    """The stays, six a line: file(calls in it) > ..."""
    parts = [f"{rel}({n})" if n > 1 else rel for rel, n in stays(calls)]
    return "\n".join("  " + " > ".join(parts[i : i + 6]) for i in range(0, len(parts), 6))


# -- the stack --------------------------------------------------------------------------------


class Stack:
    """The bot in this process against the sandbox; one proposal and one click at a time."""

    def __init__(
        self, http: aiohttp.ClientSession, sandbox: SandboxProcess, db: Path, url: str
    ) -> None:
        self.http, self.sandbox, self.url, self.proposals = http, sandbox, url, 0
        self.db = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)

    def row(self, sql: str, *args: Any) -> Any:
        found = self.db.execute(sql, args).fetchone()
        return None if found is None else found[0]

    def cards_posted(self) -> int:
        return int(self.row("SELECT count(*) FROM operations WHERE card_message_id IS NOT NULL"))

    async def propose(self) -> None:
        self.proposals += 1
        body = {
            "request_id": f"walk-{os.getpid()}-{self.proposals}",
            "kind": "finance.order",
            "payload": dict(harness.ORDER),
            "audience": "ops",
            "expires_in_s": 3600,
        }
        auth = {"Authorization": f"Bearer {harness.TOKEN}", "Connection": "close"}
        async with self.http.post(f"{self.url}/api/v1/operations", json=body, headers=auth) as r:
            if r.status != 201:
                raise RuntimeError(f"proposal refused: {r.status} {await r.text()}")

    def newest_card(self) -> str:
        newest = "ORDER BY created_at DESC LIMIT 1"
        return str(self.row(f"SELECT card_message_id FROM operations {newest}"))

    async def click(self, message_id: str) -> None:
        url = f"{self.sandbox.base_url}/sandbox/api/messages/{message_id}/click"
        body = {"operator": "ou_alice", "button": "confirm"}
        async with self.http.post(url, json=body) as response:
            reply = await response.json()
        if response.status != 200 or reply.get("status") != "answered":
            raise RuntimeError(f"the click was not answered: {response.status} {reply}")

    def completed(self, message_id: str) -> bool:
        state = self.row(
            "SELECT execution_state FROM operations WHERE card_message_id = ?", message_id
        )
        return bool(state == "completed")

    async def quiet(self) -> None:
        """No card due and nothing for the executor, then a moment for the passes to end."""
        await harness.cards_settled(self.http, self.url)
        working = "SELECT count(*) FROM operations WHERE execution_state != 'completed'"
        while True:
            if not self.row(working):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(QUIET_S)


Walks = dict[str, list[Call]]  # walk's name -> its calls


async def walk_once(stack: Stack, recorder: Recorder) -> Walks:
    posted = stack.cards_posted()
    proposing = bot.api.proposals.propose.__code__
    to_card = await recorder.window(proposing, stack.propose, lambda: stack.cards_posted() > posted)
    await stack.quiet()
    card = stack.newest_card()
    confirming = bot.ingress.callbacks.CallbackConsumer.on_callback.__code__
    to_outcome = await recorder.window(
        confirming, lambda: stack.click(card), lambda: stack.completed(card)
    )
    if recorder.answered is None:
        raise RuntimeError("on_callback did not return within the window")
    await stack.quiet()
    return {
        "click": to_outcome[: recorder.answered],
        "proposal: handler->card": to_card,
        "proposal: confirm->outcome": to_outcome,
        "proposal: whole": to_card + to_outcome,
    }


async def run(repeat: int) -> list[Walks]:
    recorder = Recorder(ROOT)
    threading.setprofile(recorder.on_thread)  # before the store starts its writer thread
    sandbox = await SandboxProcess.start()
    try:
        with tempfile.TemporaryDirectory(prefix="cs-walk-") as tmp:
            port = harness.free_port()
            execution = {"workers": "inline", "poll_s": 3600.0, "venue_tick_s": 0.5}
            data = harness.settings_data(sandbox, Path(tmp), port, execution)
            data["cards"] = {"poll_s": 3600.0}
            data["operations"] = {"expiry_sweep_s": 60.0}
            config = resolve(parse(data), harness.bot_environ(sandbox))
            stop, ready = asyncio.Event(), asyncio.Event()
            server = asyncio.create_task(serve(config, stop=stop, on_ready=lambda _u: ready.set()))
            try:
                async with aiohttp.ClientSession() as http:
                    await asyncio.wait_for(ready.wait(), harness.CONNECT_DEADLINE_S)
                    await sandbox.wait_connections(http, 1, "the bot's long connection")
                    url = f"http://127.0.0.1:{port}"
                    stack = Stack(http, sandbox, Path(tmp) / "bench.db", url)
                    await stack.quiet()
                    await walk_once(stack, recorder)  # warm-up: lazy imports, caches
                    return [await walk_once(stack, recorder) for _ in range(repeat)]
            finally:
                stop.set()
                await asyncio.wait_for(server, 60)
    finally:
        threading.setprofile(None)
        logging.getLogger("Lark").setLevel(logging.CRITICAL)  # it logs the close as an error
        await sandbox.stop()


def spread(values: Sequence[int]) -> str:
    shown = f"{statistics.median(values):g}"
    return shown if min(values) == max(values) else f"{shown} [{min(values)}-{max(values)}]"


def table(runs: Sequence[Walks]) -> str:
    head = ("calls", "stays", "files", "packages", "returns", "returns*", "store->bot")
    lines = [f"{'walk':<28} " + " ".join(f"{h:>12}" for h in head)]
    for name in runs[0]:
        measured = [figures(walks[name]) for walks in runs]
        cells = [spread([getattr(f, FIELD.get(h, h)) for f in measured]) for h in head]
        lines.append(f"{name:<28} " + " ".join(f"{c:>12}" for c in cells))
        first = measured[0].transitions
        lines.append(f"{'':<28} transitions: " + ", ".join(f"{k} {v}" for k, v in first.items()))
    return "\n".join(lines)


def where_from() -> str:
    """Where our packages were imported from (imported by now, through bot.app.server)."""
    files = {name: sys.modules[name].__file__ for name in ("bot", "cards", "store", "workers")}
    wrong = [f"{n}: {f}" for n, f in files.items() if not str(f).startswith(str(ROOT))]
    if wrong:
        raise SystemExit(f"not from --root {ROOT}: {wrong}")
    return ", ".join(f"{n} {f}" for n, f in files.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", default=str(ROOT), help="where the packages are (read first)")
    parser.add_argument("--repeat", type=int, default=3, help="recorded walks of each kind")
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    print(f"packages: {where_from()}", file=sys.stderr, flush=True)
    runs = asyncio.run(run(args.repeat))
    if args.json:
        out = {name: [asdict(figures(walks[name])) for walks in runs] for name in runs[0]}
        print(json.dumps({"root": str(ROOT), "walks": out}, indent=2))
    else:
        print(f"root: {ROOT}; {args.repeat} repetitions (median [range]); stays of the first:")
        for name, calls in runs[0].items():
            if name != "proposal: whole":
                print(f"{name}: {len(stays(calls))} stays\n{compact(calls)}")
        print(table(runs))
        print("returns*: the same, with calls into " + ", ".join(LEAVES) + " left out")
    sys.stdout.flush()
    os._exit(0)  # the lark-oapi thread has no stop(); don't wait on it at exit


if __name__ == "__main__":
    main()
