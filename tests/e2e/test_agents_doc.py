"""docs/agents.md's worked Python example, as written, against the in-process bot: only its
URL is replaced. The test is the operator who confirms on the card; the example prints the
fill, marked simulated."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from tests.support.processes import ROOT
from tests.support.stack import DEV_TOKEN, Stack, StackFactory
from tests.support.waiting import eventually

GUIDE = ROOT / "docs" / "agents.md"


def example() -> str:
    [code] = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.DOTALL)
    return str(code)


async def test_the_guides_python_example_files_waits_and_prints_the_fill(
    make_stack: StackFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    stack: Stack = await make_stack("ws")
    code = example().replace("http://127.0.0.1:8080", stack.bot_url)
    assert stack.bot_url in code
    namespace: dict[str, Any] = {}
    exec(compile(code, str(GUIDE), "exec"), namespace)
    running = asyncio.create_task(namespace["order_with_a_human_in_the_loop"](DEV_TOKEN))

    async def card() -> bool:
        page = await stack.store.list_operations(limit=1)
        return bool(page.items) and page.items[0].card_message_id is not None

    await eventually(card)
    op = (await stack.store.list_operations(limit=1)).items[0]
    assert op.card_message_id is not None and op.envelope.source.reason
    reply = await stack.click(op.card_message_id, "ou_alice")
    assert reply["toast"]["type"] == "success", reply
    await asyncio.wait_for(running, 120)
    assert capsys.readouterr().out.strip() == "filled (simulated)"
