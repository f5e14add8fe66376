"""The MCP server serves whatever kinds the registry holds (issue 31). A domain registered
before `countersign mcp` starts (the toy lamp of tests/support, through
tests/support/registry_toy.py) is in the tools' kind enum, the instructions and the kinds
resource; its payload schema (as its own config table shapes it) and its examples are
resources; and its example, checked through the MCP tool, passes the bot's filing checks
while a lamp it does not have is refused by name. No MCP module knows the kind. Both
backends, over stdio and streamable HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError

from tests.support.mcp_client import call, connected
from tests.support.registry_toy import ConfiguredToy
from tests.support.stack import DEV_TOKEN, Stack, StackFactory
from tests.support.toy_domain import EXAMPLES, KIND
from workers.domains import DOMAINS, registered

LAMPS = ["desk", "hall"]
LAUNCHER = "tests.support.registry_toy"
# the config `countersign mcp` reads (COUNTERSIGN_CONFIG): its [domains.toy] shapes the schema
CONFIG = """\
[[audiences]]
name = "ops"
chat_id = "oc_ops"
operators = ["ou_alice", "ou_bob"]

[[proposers]]
name = "dev-agent"
token_env = "COUNTERSIGN_TOKEN"

[domains.toy]
lamps = ["desk", "hall"]
"""


@pytest.fixture
def toy() -> Iterator[None]:
    """The toy registered in this process (the bot's) for the test and its stack's teardown."""
    with registered(ConfiguredToy()):
        yield


async def resource(agent: Client, uri: str) -> Any:
    read = await agent.read_resource(uri)
    [contents] = read.contents
    return json.loads(contents.text)  # type: ignore[union-attr]


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_domain_registered_at_run_time_is_served_by_the_unchanged_mcp_server(
    toy: None, make_stack: StackFactory, tmp_path: Path, transport: str
) -> None:
    stack: Stack = await make_stack("ws", domains={"toy": {"lamps": LAMPS}})
    config = tmp_path / "countersign.toml"
    config.write_text(CONFIG, encoding="utf-8")
    env = {"COUNTERSIGN_CONFIG": str(config)}
    async with connected(transport, stack.bot_url, DEV_TOKEN, LAUNCHER, env) as agent:
        tools = {tool.name: tool for tool in (await agent.list_tools()).tools}
        for name in ("propose_operation", "check_operation"):
            kind_arg = tools[name].input_schema["properties"]["kind"]
            assert kind_arg["enum"] == sorted(DOMAINS) and KIND in kind_arg["enum"]
            assert KIND in kind_arg["description"]
        assert agent.instructions is not None and KIND in agent.instructions

        listed = await resource(agent, "countersign://kinds")
        assert [line["kind"] for line in listed] == sorted(DOMAINS)
        [line] = [line for line in listed if line["kind"] == KIND]
        assert line["config_table"] == "domains.toy" and line["simulated"] is True
        assert line["moves_amount"] is False
        assert line["title"] == {"en": "Switch a lamp", "zh": "开关灯"}

        described = await resource(agent, f"countersign://kinds/{KIND}")
        assert described["kind"] == KIND and described["schema_version"] == 1
        lamp = described["payload_schema"]["properties"]["lamp"]
        assert lamp["enum"] == LAMPS  # shaped by [domains.toy] of the config it was given
        assert {"lamp", "state"} <= set(described["payload_schema"]["required"])
        shown = [
            {"name": e.name, "summary": e.summary, "payload": dict(e.payload)} for e in EXAMPLES
        ]
        assert described["examples"] == shown
        examples = await resource(agent, f"countersign://kinds/{KIND}/examples")
        assert examples == {"kind": KIND, "examples": shown}
        with pytest.raises(MCPError):
            await agent.read_resource("countersign://kinds/toy.nothing")

        # the example passes every check the bot's filing runs; an unknown lamp is named
        example = dict(EXAMPLES[0].payload)
        failed, checked = await call(
            agent, "check_operation", kind=KIND, payload=example, audience="ops"
        )
        assert not failed and checked["admissible"], checked
        failed, refused = await call(
            agent,
            "check_operation",
            kind=KIND,
            payload={**example, "lamp": "attic"},
            audience="ops",
        )
        assert failed and "payload.lamp" in [problem["field"] for problem in refused["fields"]]
    assert not (await stack.store.list_operations(limit=10)).items  # a check files nothing
