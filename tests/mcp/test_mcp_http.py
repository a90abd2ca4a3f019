"""``intent-runtime-mcp --http`` on loopback: the SDK Client in both eras, plus raw HTTP."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from intentref.mcp.server import INSTRUCTIONS, MCP_TOOLS
from mcp_support import (
    ERAS,
    ORDER_CORE,
    ServerProcess,
    accept,
    call,
    modern_meta,
    prepare_order,
)

# The Bridge reports the first fault of a malformed call (D-MCP-006, D-REQ-006).
BAD = [
    ("intent_prepare", {"instance": "orders", "input": 5, "extra": 1}, "INPUT_INVALID", ["/extra"]),
    ("intent_accept", {"jobId": "j"}, "INPUT_INVALID", ["/stepToken"]),
    ("intent_cancel", {"outcome": "refusal"}, "INPUT_INVALID", ["/jobId"]),
    ("no_such_tool", {}, "BRIDGE_TOOL_NOT_FOUND", [None]),
]
ACCEPT = "application/json, text/event-stream"


def run(url: str, mode: str, body: Any) -> None:
    async def main() -> None:
        async with Client(url, mode=mode) as client:
            await body(client)

    anyio.run(main)


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_tools_list_and_instructions(http_url: str, mode: str, version: str) -> None:
    async def body(client: Client) -> None:
        assert client.protocol_version == version
        assert client.instructions == INSTRUCTIONS
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == [t["name"] for t in MCP_TOOLS]
        assert [t.input_schema for t in listed.tools] == [t["inputSchema"] for t in MCP_TOOLS]

    run(http_url, mode, body)


@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_bad_calls_and_a_ten_megabyte_candidate(http_url: str, mode: str, version: str) -> None:
    async def body(client: Client) -> None:
        for tool, arguments, code, paths in BAD:
            reply = await call(client, tool, arguments)
            assert reply["kind"] == "error"
            assert reply["error"]["code"] == code
            assert [i["path"] for i in reply["error"]["issues"]] == paths
            await prepare_order(client)
        task = await prepare_order(client)
        # 10 MB fits the HTTP body limit (D-MCP-009), so the Bridge itself refuses it.
        refused = await accept(client, task, "y" * (10 * 1024 * 1024))
        assert refused["kind"] == "error"
        assert refused["error"]["code"] == "LIMIT_EXCEEDED"
        resumed = await accept(client, task, ORDER_CORE)
        assert resumed["kind"] == "task" and resumed["stage"] == "data", resumed

    run(http_url, mode, body)


def test_handshake_sessions_own_their_jobs(http_url: str) -> None:
    """Each Mcp-Session-Id is its own Bridge session (D-MCP-002, R-BRG connect scoping)."""

    async def main() -> None:
        async with Client(http_url, mode="legacy") as first, Client(http_url, mode="legacy") as second:
            task = await prepare_order(first)
            foreign = await accept(second, task, ORDER_CORE)
            assert foreign["kind"] == "error"
            assert foreign["error"]["code"] == "BRIDGE_JOB_NOT_FOUND"
            own = await accept(first, task, ORDER_CORE)
            assert own["kind"] == "task" and own["stage"] == "data"

    anyio.run(main)


def test_stateless_era_requests_share_one_session(http_url: str) -> None:
    """2026-07-28 requests carry no session; one shared Bridge session owns their jobs (D-MCP-003)."""

    async def main() -> None:
        async with Client(http_url) as first:
            task = await prepare_order(first)
        async with Client(http_url) as second:
            reply = await accept(second, task, ORDER_CORE)
            assert reply["kind"] == "task" and reply["stage"] == "data", reply

    anyio.run(main)


@pytest.fixture
def one_job_server(config_file: Path) -> Iterator[str]:
    server = ServerProcess(
        "--config", str(config_file), "--http", "127.0.0.1:0", "--max-jobs", "1", stdin=subprocess.DEVNULL
    )
    try:
        yield server.wait_for_stderr(r"serving streamable HTTP at (http://\S+)").group(1)
    finally:
        assert server.stop() == 0, server.stderr


def test_ending_an_mcp_session_releases_its_jobs(one_job_server: str) -> None:
    """spec: R-LIF-012 -- the client's DELETE closes the Bridge session and frees capacity."""

    async def main() -> None:
        async with Client(one_job_server, mode="legacy") as holder:
            await prepare_order(holder)
            async with Client(one_job_server, mode="legacy") as other:
                full = await call(other, "intent_prepare", {"instance": "orders", "input": "查询订单 000123"})
                assert full["kind"] == "error", full  # the one job slot is taken
        async with Client(one_job_server, mode="legacy") as later:
            await prepare_order(later)  # the holder's session ended, so its job was released

    anyio.run(main)


def _sse_messages(response: httpx.Response) -> list[dict[str, Any]]:
    if response.headers["content-type"].startswith("application/json"):
        return [response.json()]
    out = []
    for line in response.text.splitlines():
        if line.startswith("data:"):
            out.append(json.loads(line[5:]))
    return out


def test_dns_rebinding_protection_is_on(http_url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}}
    headers = {"content-type": "application/json", "accept": ACCEPT, "mcp-protocol-version": "2026-07-28",
               "mcp-method": "tools/list"}  # fmt: skip
    with httpx.Client() as client:
        assert client.post(http_url, json=body, headers=headers).status_code == 200
        evil_host = client.post(http_url, json=body, headers={**headers, "host": "evil.example:80"})
        assert evil_host.status_code == 421
        evil_origin = client.post(http_url, json=body, headers={**headers, "origin": "http://evil.example"})
        assert evil_origin.status_code == 403
        legacy = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}}  # fmt: skip
        hijacked = client.post(http_url, json=legacy, headers={"accept": ACCEPT, "host": "evil.example"})
        assert hijacked.status_code == 421


def _post(client: httpx.Client, url: str, raw: str, headers: dict[str, str]) -> httpx.Response:
    return client.post(
        url,
        content=raw.encode("ascii"),
        headers={"content-type": "application/json", "accept": ACCEPT, **headers},
    )


def test_lone_surrogates_over_http(http_url: str) -> None:
    """2026 era: the call reaches the Bridge.  Handshake era: the SDK's transport refuses
    the body as unparseable (D-MCP-008), and the session keeps serving."""
    arguments = {"instance": "orders", "input": "查询订单 \ud800"}
    modern = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
              "params": {"name": "intent_prepare", "arguments": arguments, "_meta": modern_meta()}}  # fmt: skip
    modern_headers = {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "intent_prepare",
    }
    with httpx.Client(timeout=30) as client:
        answer = _sse_messages(_post(client, http_url, json.dumps(modern), modern_headers))[-1]
        assert answer["id"] == 7
        assert answer["result"]["isError"] is True
        assert answer["result"]["structuredContent"]["error"]["code"] == "INPUT_INVALID"

        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}}  # fmt: skip
        opened = _post(client, http_url, json.dumps(init), {})
        session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        _post(
            client, http_url, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), session
        )
        legacy = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "intent_prepare", "arguments": arguments},
        }
        refused = _post(client, http_url, json.dumps(legacy), session)
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == -32700
        good = {
            **legacy,
            "id": 3,
            "params": {
                "name": "intent_prepare",
                "arguments": {"instance": "orders", "input": "查询订单 000123"},
            },
        }
        served = _sse_messages(_post(client, http_url, json.dumps(good), session))[-1]
        assert served["id"] == 3
        assert served["result"]["structuredContent"]["kind"] == "task"
        client.delete(http_url, headers=session)
