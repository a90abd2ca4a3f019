"""The Python host loop README links (tests/mcp/host_loop_example.py) against the installed command.

The example is seed 000's recognizeWithHost over MCP; here a scripted generator stands in
for the host's model.  It runs the real console script over stdio with the SDK's Client.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from host_loop_example import recognize_with_host
from mcp_support import ORDER_CORE, ORDER_INPUT, script, text


def test_host_loop_reaches_the_result_with_a_scripted_generator(config_file: Path) -> None:
    tasks: list[dict[str, Any]] = []

    async def generate(task: dict[str, Any]) -> str:
        tasks.append(task)
        assert task["stage"] == "core"  # fields [] recognizes intents only: one core stage
        return text(ORDER_CORE)

    reply = anyio.run(recognize_with_host, str(config_file), ORDER_INPUT, generate, script())
    assert [task["stage"] for task in tasks] == ["core"]
    assert reply["kind"] == "result", reply
    assert reply["result"]["input"] == ORDER_INPUT
    assert reply["result"]["primaryIntent"] == ORDER_CORE["primaryIntent"]
    assert reply["result"]["data"] == {}


def test_host_loop_cancels_the_job_when_the_generator_fails(
    config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    real_call_tool = Client.call_tool

    async def recording_call_tool(
        self: Client, name: str, arguments: dict[str, Any], *a: Any, **k: Any
    ) -> Any:
        result = await real_call_tool(self, name, arguments, *a, **k)
        calls.append((name, arguments, result.structured_content))
        return result

    monkeypatch.setattr(Client, "call_tool", recording_call_tool)  # records, then the real call

    class HostModelDown(Exception):
        pass

    async def generate(task: dict[str, Any]) -> str:
        raise HostModelDown(task["jobId"])

    with pytest.raises(HostModelDown):
        anyio.run(recognize_with_host, str(config_file), ORDER_INPUT, generate, script())
    assert [name for name, _, _ in calls] == ["intent_prepare", "intent_cancel"]
    (_, _, task), (_, cancel_args, cancelled) = calls
    assert cancel_args == {"jobId": task["jobId"], "outcome": "cancelled"}
    assert cancelled["kind"] == "error"
    assert cancelled["error"]["code"] == "MODEL_ABORTED"  # the job ended as the host cancelled it
