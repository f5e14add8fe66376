"""The audit chain's head witnessed in Lark, through the sandbox and the unmodified SDK: the
daily line appears in the audience's chat and nowhere else; `audit verify FILE --witness`
passes against it; after a raw-SQL edit whose forger also rewrote every later hash (so the
store's own chain holds again), the export no longer matches the head Lark kept."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from sqlalchemy import Connection, select, update

from kernel.timeutil import utc_now
from larksandbox import SandboxState
from store import GENESIS, AuditChainRow, AuditRow, entry_material, link_hash, witnessed_head
from tests.support.audit import link_all
from tests.support.backends import Backend
from tests.support.bot_processes import bot_env, write_config
from tests.support.factories import order_request
from tests.support.processes import cli, free_port
from tests.support.stack import StackFactory
from tests.support.waiting import eventually


def head_lines(state: SandboxState) -> dict[str, list[tuple[int, str]]]:
    """Head lines by chat, as Lark holds them."""
    found: dict[str, list[tuple[int, str]]] = {}
    for message in state.messages.values():
        if message.msg_type != "text":
            continue
        head = witnessed_head(json.loads(message.content).get("text", ""))
        if head is not None:
            found.setdefault(message.chat_id, []).append(head)
    return found


def rewritten_from(conn: Connection, seq: int, actor: str) -> None:
    """A forger with the store: edit entry `seq`, then recompute every hash from it on and
    the head, on the head's lock (the running chainers wait)."""
    conn.execute(select(AuditChainRow.seq).where(AuditChainRow.id == 1).with_for_update()).one()
    conn.execute(update(AuditRow).where(AuditRow.chain_seq == seq).values(actor=actor))
    rows = conn.execute(
        select(AuditRow.__table__)
        .where(AuditRow.chain_seq.is_not(None))
        .order_by(AuditRow.chain_seq)
    ).all()
    last = GENESIS
    for row in rows:
        if row.chain_seq >= seq:
            entry = link_hash(last, entry_material(row.chain_seq, row))
            conn.execute(
                update(AuditRow)
                .where(AuditRow.id == row.id)
                .values(prev_hash=last, entry_hash=entry)
            )
            last = entry
        else:
            last = row.entry_hash
    conn.execute(update(AuditChainRow).where(AuditChainRow.id == 1).values(head_hash=last))


async def test_the_head_is_witnessed_in_the_ops_chat_and_verify_witness_catches_a_rewrite(
    make_stack: StackFactory, backend: Backend, tmp_path: Path
) -> None:
    # the witness's time: a few minutes from now (UTC, the cards' default zone)
    at = (utc_now() + timedelta(minutes=5)).strftime("%H:%M")
    stack = await make_stack("ws", audit={"witness": True, "witness_at": at, "poll_s": 0.2})
    for n in range(2):
        _, message_id = await stack.offered(order_request(f"witnessed-{n}"))
        await stack.click(message_id, "ou_alice")
    await link_all(stack.store)
    assert head_lines(stack.state) == {}  # not before its time

    stack.clock.offset += timedelta(minutes=10)  # past the witness's time today
    await eventually(lambda: bool(head_lines(stack.state)), woken_by=stack.state)
    lines = head_lines(stack.state)
    assert list(lines) == ["oc_ops"]  # the audience's chat only: not the counterparty's
    [(witnessed_seq, _)] = lines["oc_ops"]
    assert witnessed_seq > 0

    config = str(write_config(tmp_path / "cli.toml", backend, stack.sandbox, free_port(), "ws"))
    env = bot_env(stack.sandbox)
    export = tmp_path / "audit.jsonl"
    made = await cli("audit", "export", "--out", str(export), "--config", config, env=env)
    assert made.code == 0, made.err
    holds = await cli("audit", "verify", str(export), "--witness", "--config", config, env=env)
    assert holds.code == 0, holds.out + holds.err
    assert f"witnessed: 1 heads Lark holds match, the latest entry {witnessed_seq} in oc_ops" in (
        holds.out
    )

    await stack.store.transact(lambda conn: rewritten_from(conn, 1, "ou_mallory"))
    store_says = await cli("audit", "verify", "--store", "--config", config, env=env)
    assert store_says.code == 0, store_says.out  # the forgery holds together in the store
    forged = tmp_path / "forged.jsonl"
    made = await cli("audit", "export", "--out", str(forged), "--config", config, env=env)
    assert made.code == 0, made.err
    alone = await cli("audit", "verify", str(forged), env=env)
    assert alone.code == 0, alone.out  # and in the file, without a witness
    caught = await cli("audit", "verify", str(forged), "--witness", "--config", config, env=env)
    assert caught.code == 1, caught.out + caught.err
    assert caught.out.startswith(
        f"export broken: entry {witnessed_seq} is not the head witnessed in oc_ops"
    ), caught.out
