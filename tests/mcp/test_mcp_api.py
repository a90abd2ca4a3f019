"""The adapter's Python surface: MCP_TOOLS, the envelope, serve_intent_mcp(_http) in-process."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types
import pytest
from jsonschema import Draft7Validator, Draft202012Validator
from mcp import Client
from mcp.shared.memory import create_client_server_memory_streams
from mcp_types import methods
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

from intentref import Intent, IntentParseError
from intentref.mcp.server import (
    MCP_TOOLS,
    IntentMcpService,
    call_intent_tool,
    serve_intent_mcp,
    serve_intent_mcp_http,
    tool_result,
)
from mcp_support import CONFIG, ERAS, ORDER_CORE, accept, order_flow, prepare_order

TASK = {
    "kind": "task", "jobId": "j", "stepToken": "t", "stage": "data", "instructions": "i",
    "payload": "{}", "format": {"kind": "json_object"},
}  # fmt: skip
RESULT = {"kind": "result", "result": {"input": "x", "normalizedInput": "x。", "primaryIntent": None,
          "requirements": [], "intents": [], "prohibitions": [], "data": {}}}  # fmt: skip
ERROR = {"kind": "error", "error": {"code": "INPUT_INVALID", "stage": "input",
         "message": "input must contain non-whitespace text.", "issues": []}}  # fmt: skip


def test_mcp_tools_declares_the_three_tools() -> None:
    """spec: R-BRG-003 -- name, description and inputSchema for each of the three tools."""
    assert [t["name"] for t in MCP_TOOLS] == ["intent_prepare", "intent_accept", "intent_cancel"]
    for tool in MCP_TOOLS:
        assert set(tool) == {"name", "description", "inputSchema", "outputSchema"}
        assert tool["description"].strip()
        for schema in (tool["inputSchema"], tool["outputSchema"]):
            assert schema["type"] == "object"  # the 2025 revisions require an object root
            Draft202012Validator.check_schema(schema)
            Draft7Validator.check_schema(schema)
        assert tool["inputSchema"]["additionalProperties"] is False
    required = {t["name"]: t["inputSchema"]["required"] for t in MCP_TOOLS}
    assert required == {
        "intent_prepare": ["instance", "input"],
        "intent_accept": ["jobId", "stepToken", "candidateText"],
        "intent_cancel": ["jobId"],
    }


@pytest.mark.parametrize("version", KNOWN_PROTOCOL_VERSIONS)
def test_mcp_tools_are_a_valid_listing_in_every_revision(version: str) -> None:
    """spec: R-BRG-004 -- a host can embed the declarations as they are, in any revision."""
    listing = mcp_types.ListToolsResult(tools=[mcp_types.Tool.model_validate(t) for t in MCP_TOOLS])
    wire = listing.model_dump(by_alias=True, mode="json", exclude_none=True)
    listed = methods.serialize_server_result("tools/list", version, wire)
    assert listed["tools"] == MCP_TOOLS  # nothing of the declarations is lost in any revision


@pytest.mark.parametrize("reply", [TASK, RESULT, ERROR], ids=["task", "result", "error"])
def test_every_reply_kind_fits_the_output_schema(reply: dict[str, Any]) -> None:
    for tool in MCP_TOOLS:
        Draft202012Validator(tool["outputSchema"]).validate(reply)


def _without(reply: dict[str, Any], member: str) -> dict[str, Any]:
    return {k: v for k, v in reply.items() if k != member}


@pytest.mark.parametrize(
    "reply",
    [
        {},
        {"kind": "done"},
        _without(TASK, "stepToken"),
        _without(TASK, "format"),
        {"kind": "result"},
        {"kind": "error"},
        {**RESULT, "kind": "task"},  # a result's members under another kind's constant
        {**ERROR, "kind": "result"},
    ],
    ids=["empty", "unknown-kind", "task-no-token", "task-no-format", "result-bare", "error-bare",
         "result-as-task", "error-as-result"],
)
def test_output_schema_rejects_a_reply_missing_its_kinds_members(reply: dict[str, Any]) -> None:
    """D-MCP-004: each kind's branch requires that kind's members."""
    validator = Draft202012Validator(MCP_TOOLS[0]["outputSchema"])
    assert not validator.is_valid(reply)


@pytest.mark.parametrize("reply", [TASK, RESULT, ERROR], ids=["task", "result", "error"])
def test_envelope(reply: dict[str, Any]) -> None:
    """spec: R-ENV-001, R-ENV-002, R-ENV-003, R-ENV-005."""
    result = tool_result(reply)
    assert result.structured_content == reply
    assert [c.type for c in result.content] == ["text"]
    assert result.content[0].text == json.dumps(reply, ensure_ascii=False, separators=(",", ":"))
    assert result.is_error is (reply["kind"] == "error")  # spec: R-ENV-003


def test_envelope_of_an_unsendable_string_uses_the_replacement_character() -> None:
    reply = {
        "kind": "error",
        "error": {"code": "INPUT_INVALID", "stage": "input", "message": "bad \ud800", "issues": []},
    }
    result = tool_result(reply)
    result.content[0].text.encode("utf-8")  # a UTF-8 wire can carry it now
    assert result.structured_content["error"]["message"] == "bad \ufffd"
    assert json.loads(result.content[0].text) == result.structured_content


class _BrokenSession:
    """A session whose methods fail: what a Bridge bug looks like to the adapter."""

    def prepare(self, request: dict[str, Any]) -> Any:
        raise ZeroDivisionError("bridge bug")

    def accept(self, request: dict[str, Any]) -> Any:
        return {"kind": "maybe"}

    def cancel(self, request: dict[str, Any]) -> Any:
        return None

    def close(self) -> None:
        pass


def test_internal_failures_become_internal_error_replies(caplog: pytest.LogCaptureFixture) -> None:
    session = _BrokenSession()
    with caplog.at_level(logging.ERROR, logger="intentref.mcp.adapter"):
        replies = [
            call_intent_tool(session, "intent_prepare", {"instance": "a", "input": "b"}),
            call_intent_tool(
                session, "intent_accept", {"jobId": "a", "stepToken": "b", "candidateText": "c"}
            ),
            call_intent_tool(session, "intent_cancel", {"jobId": "a"}),
        ]
    for reply in replies:
        assert reply["kind"] == "error"
        assert reply["error"]["code"] == "INTERNAL_ERROR"
        assert reply["error"]["stage"] == "bridge"
        assert "bridge bug" not in reply["error"]["message"]  # internals stay in the log
    assert "bridge bug" in caplog.text


@asynccontextmanager
async def _in_memory(
    config: dict[str, Any], *, inside: bool = False
) -> AsyncIterator[tuple[Any, IntentMcpService]]:
    """serve_intent_mcp over an in-memory stream pair; yields the client side and the service."""
    async with create_client_server_memory_streams() as (client_streams, server_streams):
        if inside:  # seed 000 "MCP 服务": BridgeConfig & { transport }
            service = await serve_intent_mcp({**config, "transport": server_streams})
        else:
            service = await serve_intent_mcp(config, transport=server_streams)
        try:
            yield client_streams, service
        finally:
            await service.close()


@asynccontextmanager
async def _transport(streams: Any) -> AsyncIterator[Any]:
    yield streams


def _config() -> tuple[dict[str, Any], list[Intent]]:
    intents = {name: Intent(cfg) for name, cfg in CONFIG["instances"].items()}
    return {"instances": intents, "maxJobs": 8}, list(intents.values())


@pytest.mark.parametrize("inside", [False, True], ids=["transport-argument", "transport-in-config"])
@pytest.mark.parametrize(("mode", "version"), ERAS)
def test_serve_intent_mcp_over_a_caller_transport(mode: str, version: str, inside: bool) -> None:
    """spec: R-SRV-001 -- every BridgeConfig option plus a transport; an awaitable close()."""
    config, intents = _config()

    async def main() -> None:
        async with (
            _in_memory(config, inside=inside) as (streams, service),
            Client(_transport(streams), mode=mode) as client,
        ):
            assert client.protocol_version == version
            await order_flow(client)
            await prepare_order(client)  # left active on purpose
            assert service.bridge.stats()["activeJobs"] == 1  # type: ignore[attr-defined]
        # spec: R-SRV-003 -- close() closed the Bridge and left the caller's Intents alone.
        assert service.bridge.closed  # type: ignore[attr-defined]
        assert not any(intent.disposed for intent in intents)

    anyio.run(main)


def test_the_connection_ending_closes_its_session() -> None:
    config, _ = _config()

    async def main() -> None:
        async with _in_memory(config) as (streams, service):
            async with Client(_transport(streams), mode="legacy") as client:
                await prepare_order(client)
                assert service.bridge.stats()["activeJobs"] == 1  # type: ignore[attr-defined]
            client_write = streams[1]
            await client_write.aclose()  # end of input, as stdin EOF would be
            with anyio.fail_after(10):
                await service.wait_closed()
            assert service.bridge.stats()["activeJobs"] == 0  # type: ignore[attr-defined]  # R-LIF-012

    anyio.run(main)


def test_a_bad_bridge_config_raises_before_serving() -> None:
    async def main() -> None:
        with pytest.raises(IntentParseError) as caught:
            await serve_intent_mcp({"instances": {}}, transport=object())
        assert caught.value.code == "CONFIG_INVALID"
        with pytest.raises(IntentParseError):
            await serve_intent_mcp_http({"instances": {"a": Intent({})}, "maxJobs": 0})

    anyio.run(main)


def test_serve_intent_mcp_http_in_process() -> None:
    config, intents = _config()

    async def main() -> None:
        service = await serve_intent_mcp_http(config)
        try:
            assert service.url is not None and service.url.startswith("http://127.0.0.1:")
            assert service.url.endswith("/mcp")
            for mode in ("legacy", "auto"):
                async with Client(service.url, mode=mode) as client:
                    task = await prepare_order(client)
                    data_task = await accept(client, task, ORDER_CORE)
                    assert data_task["stage"] == "data"
            # The 2026 era's shared session still holds its job; the handshake one went with DELETE.
            assert service.bridge.stats()["activeJobs"] == 1  # type: ignore[attr-defined]
        finally:
            await service.close()
        assert service.bridge.closed  # type: ignore[attr-defined]
        assert not any(intent.disposed for intent in intents)

    anyio.run(main)


def test_extra_tools_are_served_beside_the_three() -> None:
    """D-MCP-028: the public building API adds tools; they never shadow an intent tool."""
    from intentref.mcp.server import ExtraTool

    config, _ = _config()
    echo = ExtraTool(
        {"name": "echo", "description": "Returns its arguments.", "inputSchema": {"type": "object"}},
        lambda arguments: tool_result({"kind": "result", "result": dict(arguments or {})}),
    )
    broken = ExtraTool(
        {"name": "broken", "description": "Fails.", "inputSchema": {"type": "object"}},
        lambda arguments: 1 / 0,  # type: ignore[arg-type,return-value]
    )

    async def main() -> None:
        async with create_client_server_memory_streams() as (client_streams, server_streams):
            service = await serve_intent_mcp(config, transport=server_streams, extra_tools=[echo, broken])
            try:
                async with Client(_transport(client_streams)) as client:
                    names = [tool.name for tool in (await client.list_tools()).tools]
                    assert names == [*(t["name"] for t in MCP_TOOLS), "echo", "broken"]
                    echoed = await client.session.call_tool("echo", {"said": "hi"})
                    assert echoed.structured_content == {"kind": "result", "result": {"said": "hi"}}
                    failed = await client.session.call_tool("broken", {})
                    assert failed.is_error and failed.structured_content["error"]["code"] == "INTERNAL_ERROR"
                    await order_flow(client)  # the intent tools are untouched
            finally:
                await service.close()
        for clash in ("intent_accept", "echo"):
            taken = ExtraTool({"name": clash, "description": "", "inputSchema": {"type": "object"}}, echo.call)
            with pytest.raises(ValueError, match="already served"):
                await serve_intent_mcp(config, transport=("unused", "unused"), extra_tools=[echo, taken])

    anyio.run(main)


def test_the_production_server_has_no_benchmark_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """D-MCP-015: no environment switch adds the benchmark floors; only devtools' own server has them."""
    from intentref.devtools.bench_mcp import BENCH_NOOP_TOOL, BENCH_REPLAY_TOOL, bench_tools

    monkeypatch.setenv("INTENTREF_BENCH_NOOP_TOOL", "1")  # the switch it used to read
    config, _ = _config()

    async def main() -> None:
        async with _in_memory(config) as (streams, _service), Client(_transport(streams)) as client:
            assert [tool.name for tool in (await client.list_tools()).tools] == [t["name"] for t in MCP_TOOLS]
            refused = await client.session.call_tool(BENCH_NOOP_TOOL, {})
            assert refused.structured_content["error"]["code"] == "BRIDGE_TOOL_NOT_FOUND"
        async with create_client_server_memory_streams() as (client_streams, server_streams):
            tools = bench_tools(config["instances"])
            service = await serve_intent_mcp(config, transport=server_streams, extra_tools=tools)
            try:
                async with Client(_transport(client_streams)) as client:
                    task = await prepare_order(client)
                    data = await accept(client, task, ORDER_CORE)
                    replayed = await client.session.call_tool(BENCH_REPLAY_TOOL, {"ignored": True})
                    noop = await client.session.call_tool(BENCH_NOOP_TOOL, {})
                    # A data task of the same shape and size as a real accept's, built at start.
                    replay = replayed.structured_content
                    assert {k: v for k, v in replay.items() if k not in ("jobId", "stepToken")} == {
                        k: v for k, v in data.items() if k not in ("jobId", "stepToken")
                    }
                    assert len(replayed.content[0].text) == len(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
                    assert noop.structured_content == {"kind": "result", "result": {}}
                    assert service.bridge.stats()["activeJobs"] == 1  # type: ignore[attr-defined]  # neither touched it
            finally:
                await service.close()

    anyio.run(main)
