"""The installed ``intent-runtime-mcp`` over stdio, driven by the SDK's own Client in both eras.

spec: R-SRV-004 (the command), R-SRV-002 (it serves serve_intent_mcp's default, stdio).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from intentref.mcp.server import INSTRUCTIONS, MCP_TOOLS
from mcp_support import (
    ERAS,
    ORDER_CORE,
    RawStdio,
    accept,
    call,
    prepare_order,
    stdio_params,
)

TOOL_NAMES = ["intent_prepare", "intent_accept", "intent_cancel"]

# (tool, arguments, error code, stage, issue paths): each must come back as an error result,
# the Bridge's own answer (D-MCP-006): its first fault, at the stage the Bridge gives it.
BAD_CALLS: list[tuple[str, dict[str, Any], str, str, list[str | None]]] = [
    ("intent_prepare", {"instance": 7, "input": ["查询"]}, "INPUT_INVALID", "bridge", ["/instance"]),
    ("intent_prepare", {"instance": "orders"}, "INPUT_INVALID", "input", ["/input"]),
    ("intent_prepare", {"instance": "orders", "input": "x", "bogus": True}, "INPUT_INVALID", "input", ["/bogus"]),
    (
        "intent_prepare",
        {"instance": "orders", "input": "x", "context": [{"role": "system", "content": "c"}]},
        "INPUT_INVALID",
        "input",
        ["/context/0/role"],
    ),
    (
        "intent_prepare",
        {"instance": "orders", "input": "x", "fields": "orderId"},
        "INPUT_INVALID",
        "input",
        ["/fields"],
    ),
    ("intent_accept", {}, "INPUT_INVALID", "bridge", ["/jobId"]),
    (
        "intent_accept",
        {"jobId": "j", "stepToken": "t", "candidateText": {"a": 1}},
        "INPUT_INVALID",
        "bridge",
        ["/candidateText"],
    ),
    ("intent_cancel", {"jobId": "j", "outcome": "later"}, "INPUT_INVALID", "bridge", ["/outcome"]),
    ("intent_cancel", {"jobId": None}, "INPUT_INVALID", "bridge", ["/jobId"]),
    ("intent_parse", {"input": "x"}, "BRIDGE_TOOL_NOT_FOUND", "bridge", [None]),
]


def run_client(config_file: Path, mode: str, body: Any) -> None:
    async def main() -> None:
        async with Client(stdio_params(config_file), mode=mode) as client:
            await body(client)

    anyio.run(main)


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_handshake_instructions_and_tools_list(config_file: Path, mode: str, version: str) -> None:
    async def body(client: Client) -> None:
        assert client.protocol_version == version
        assert client.instructions == INSTRUCTIONS
        listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == TOOL_NAMES  # spec: R-BRG-005, D-MCP-001
        for tool, declared in zip(listed.tools, MCP_TOOLS, strict=True):
            assert tool.description == declared["description"]
            assert tool.input_schema == declared["inputSchema"]
            assert tool.output_schema == declared["outputSchema"]
            assert tool.input_schema["additionalProperties"] is False

    run_client(config_file, mode, body)


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_bad_calls_are_error_results_and_serving_goes_on(config_file: Path, mode: str, version: str) -> None:
    async def body(client: Client) -> None:
        for tool, arguments, code, stage, paths in BAD_CALLS:
            reply = await call(client, tool, arguments)  # call() checks the envelope rules
            assert reply["kind"] == "error", (tool, arguments, reply)
            assert reply["error"]["code"] == code
            assert reply["error"]["stage"] == stage
            assert [issue["path"] for issue in reply["error"]["issues"]] == paths
            for issue in reply["error"]["issues"]:
                assert issue["code"] == code
                assert issue["category"] == "input"
                assert issue["message"].strip()
            await prepare_order(client)  # the next valid call is served

    run_client(config_file, mode, body)


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_unknown_instance_is_the_bridges_error(config_file: Path, mode: str, version: str) -> None:
    async def body(client: Client) -> None:
        reply = await call(client, "intent_prepare", {"instance": "nowhere", "input": "查询订单 000123"})
        assert reply["kind"] == "error"
        assert reply["error"]["code"] == "BRIDGE_INSTANCE_NOT_FOUND"

    run_client(config_file, mode, body)


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_ten_megabyte_candidate_is_refused_and_the_task_stays_open(
    config_file: Path, mode: str, version: str
) -> None:
    async def body(client: Client) -> None:
        task = await prepare_order(client)
        reply = await accept(client, task, "x" * (10 * 1024 * 1024))
        assert reply["kind"] == "error"
        assert reply["error"]["code"] == "LIMIT_EXCEEDED"  # spec: R-CAP-013
        assert len(str(reply)) < 10_000  # the refusal does not echo the candidate
        # spec: R-LIF-009 -- an oversized candidate keeps the job and its token.
        resumed = await accept(client, task, ORDER_CORE)
        assert resumed["kind"] == "task", resumed
        assert resumed["stage"] == "data"

    run_client(config_file, mode, body)


@pytest.mark.parametrize("modern", [False, True], ids=["2025-handshake", "2026-07-28"])
def test_lone_surrogates_get_an_answer(config_file: Path, modern: bool) -> None:
    """A lone surrogate escape reaches the Bridge and gets a reply; the next call is served."""
    server = RawStdio("--config", str(config_file))
    try:
        server.handshake(modern=modern)
        arguments = {"instance": "orders", "input": "查询订单 \ud800 000123"}
        reply = server.request(
            "tools/call", {"name": "intent_prepare", "arguments": arguments}, modern=modern
        )
        result = reply["result"]
        assert result["isError"] is True
        assert result["structuredContent"]["kind"] == "error"
        assert result["structuredContent"]["error"]["code"] == "INPUT_INVALID"
        assert result["structuredContent"]["error"]["issues"][0]["path"] == "/input"

        renamed = server.request("tools/call", {"name": "intent_\udc00", "arguments": {}}, modern=modern)
        assert renamed["result"]["structuredContent"]["error"]["code"] == "BRIDGE_TOOL_NOT_FOUND"

        good = {"instance": "orders", "input": "查询订单 000123"}
        task = server.request("tools/call", {"name": "intent_prepare", "arguments": good}, modern=modern)
        assert task["result"]["structuredContent"]["kind"] == "task"
        server.close_stdin()
        assert server.finish() == 0
        server.assert_stdout_is_protocol()
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
