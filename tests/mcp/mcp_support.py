"""Helpers for the MCP adapter tests: the installed console script, real SDK clients.

Nothing here mocks the SDK or the Bridge: stdio tests spawn the ``intent-runtime-mcp``
console script installed next to the running interpreter, HTTP tests run it with
``--http 127.0.0.1:0`` and talk to it over loopback.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Implementation

# The seed order example, one definition shared with the benchmarks and the other tests.
from intentref.devtools.examples import ORDER_CORE, ORDER_DATA, ORDER_INPUT, ORDER_SCHEMA

SCRIPT = Path(sys.executable).with_name("intent-runtime-mcp")

CONFIG: dict[str, Any] = {
    "instances": {
        "orders": {"language": "zh-CN", "schema": ORDER_SCHEMA, "repairAttempts": 1},
        "default": {"language": "zh-CN"},
    }
}

# (Client mode, protocol version it must end up speaking): the 2025 handshake era, and
# the 2026-07-28 stateless era the SDK client picks by default.
ERAS = [
    pytest.param("legacy", "2025-11-25", id="2025-handshake"),
    pytest.param("auto", "2026-07-28", id="2026-07-28"),
]


def script() -> str:
    # Fail, never skip: the suite is about the installed command (`pip install -e .`).
    assert SCRIPT.exists(), f"{SCRIPT} is missing: install the project into this interpreter's environment"
    return str(SCRIPT)


def script_env() -> dict[str, str]:
    # The whole environment, so the child imports intentref exactly as this interpreter does.
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def stdio_params(config_file: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=script(), args=["--config", str(config_file), *extra], env=script_env()
    )


def reply_of(result: CallToolResult) -> dict[str, Any]:
    """The BridgeReply of a tool result, after checking every envelope rule (seed 000 "MCP 外层返回").

    spec: R-ENV-001, R-ENV-002, R-ENV-003, R-ENV-005 -- and it unwraps as a host should
    (R-ENV-007): the reply is read from structuredContent and its kind checked.
    """
    assert len(result.content) == 1
    block = result.content[0]
    assert block.type == "text"
    reply = result.structured_content
    assert isinstance(reply, dict)
    assert reply["kind"] in ("task", "result", "error")
    assert json.loads(block.text) == reply
    assert block.text == json.dumps(reply, ensure_ascii=False, separators=(",", ":"))
    assert result.is_error is (reply["kind"] == "error")
    return reply


# How long a line may take to show on a busy machine: the wait ends as soon as it shows, or
# the process exits, so only a server that hangs meets it (time never decides a verdict).
START_SECONDS = 300.0

class ServerProcess:
    """The console script as a child process, its stderr collected by a thread."""

    def __init__(self, *args: str, stdin: int | None = subprocess.PIPE) -> None:
        self.proc = subprocess.Popen(
            [script(), *args],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=script_env(),
        )
        self._stderr: list[bytes] = []
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    def wait_for_stderr(self, pattern: str, timeout: float = START_SECONDS) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.stderr)
            if found:
                return found
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        raise AssertionError(f"no {pattern!r} on stderr; exit {self.proc.poll()}; stderr:\n{self.stderr}")

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signum)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(
                f"the server did not stop on signal {signum}; stderr:\n{self.stderr}"
            ) from None
        self._reader.join(timeout=5)
        return code


ORDER_RESULT_DATA = {"orderId": "000123"}


def text(value: Any) -> str:
    """A candidate as a host sends it: JSON.stringify of the object."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result: CallToolResult = await client.call_tool(tool, arguments)
    return reply_of(result)


async def prepare_order(client: Client, input_text: str = ORDER_INPUT) -> dict[str, Any]:
    reply = await call(client, "intent_prepare", {"instance": "orders", "input": input_text})
    assert reply["kind"] == "task", reply
    assert reply["stage"] == "core"
    return reply


async def accept(client: Client, task: dict[str, Any], candidate: Any) -> dict[str, Any]:
    candidate_text = candidate if isinstance(candidate, str) else text(candidate)
    args = {"jobId": task["jobId"], "stepToken": task["stepToken"], "candidateText": candidate_text}
    return await call(client, "intent_accept", args)


async def order_flow(client: Client) -> dict[str, Any]:
    """Seed 000's order example end to end: core task, core candidate, data task, data candidate."""
    core_task = await prepare_order(client)
    data_task = await accept(client, core_task, ORDER_CORE)
    assert data_task["kind"] == "task", data_task
    assert data_task["stage"] == "data"
    assert data_task["format"] == {"kind": "json_object"}
    assert (data_task["jobId"], data_task["stepToken"]) != (core_task["jobId"], core_task["stepToken"])
    payload = json.loads(data_task["payload"])
    assert payload["currentInput"] == ORDER_INPUT
    assert payload["selectedFields"] == ["orderId"]
    final = await accept(client, data_task, ORDER_DATA)
    assert final["kind"] == "result", final
    assert final["result"]["data"] == ORDER_RESULT_DATA  # spec: R-RES-003 -- at structuredContent.result
    assert final["result"]["input"] == ORDER_INPUT
    return final


PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"


def modern_meta() -> dict[str, Any]:
    """The per-request envelope a 2026-07-28 client puts in every request's _meta."""
    return {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}}


class RawStdio(ServerProcess):
    """The console script driven with hand-written JSON-RPC lines (ASCII JSON, escapes kept)."""

    def __init__(self, *args: str) -> None:
        super().__init__(*args)
        self.lines: list[bytes] = []
        self._stdout_reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._stdout_reader.start()
        self._next_id = 0

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def send(self, message: dict[str, Any] | str) -> None:
        line = (
            message if isinstance(message, str) else json.dumps(message)
        )  # ensure_ascii keeps \\ud800 escapes
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("ascii") + b"\n")
        self.proc.stdin.flush()

    def response(self, request_id: int, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            for raw in self.lines[seen:]:
                seen += 1
                message = json.loads(raw)
                if message.get("id") == request_id:
                    return message  # type: ignore[no-any-return]
            time.sleep(0.01)
        raise AssertionError(f"no response to request {request_id}; stderr:\n{self.stderr}")

    def request(self, method: str, params: dict[str, Any], *, modern: bool) -> dict[str, Any]:
        self._next_id += 1
        if modern:
            params = {**params, "_meta": modern_meta()}
        self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self.response(self._next_id)

    def handshake(self, *, modern: bool) -> None:
        if modern:
            return  # the 2026-07-28 era has no handshake: each request carries its envelope
        reply = self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
            modern=False,
        )
        assert reply["result"]["protocolVersion"] == "2025-11-25"
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def finish(self, timeout: float = 15.0) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"the server did not exit; stderr:\n{self.stderr}") from None
        self._stdout_reader.join(timeout=5)
        self._reader.join(timeout=5)
        return code

    def assert_stdout_is_protocol(self) -> None:
        # spec: R-SRV-009 -- every byte on stdout belongs to a JSON-RPC message.
        for raw in self.lines:
            assert raw.endswith(b"\n"), raw[:200]
            message = json.loads(raw)
            assert message.get("jsonrpc") == "2.0", raw[:200]


# --------------------------------------------------------------------------- HTTP clients, hoarding

HOARD_CONCURRENCY = 32


def share(size: int) -> int:
    return max(1, size // 2)  # D-MCP-025, restated here so the test can disagree with the code


def run_cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([script(), *args], stdin=subprocess.DEVNULL, capture_output=True, env=script_env(),
                          timeout=30)  # fmt: skip


@contextlib.asynccontextmanager
async def client_from(
    url: str, mode: str, name: str = "mcp", *, source: str = "127.0.0.1", headers: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    """An SDK client declaring clientInfo ``name``, its TCP connections leaving from ``source``."""
    transport = httpx2.AsyncHTTPTransport(local_address=source)
    timeout = httpx2.Timeout(30.0, read=300.0)  # the SDK's own defaults (create_mcp_http_client)
    async with (
        httpx2.AsyncClient(transport=transport, timeout=timeout, headers=headers) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode,
               client_info=Implementation(name=name, version="1.0")) as client,  # fmt: skip
    ):
        yield client


def limit_message(reply: dict[str, Any]) -> str:
    assert reply["kind"] == "error" and reply["error"]["code"] == "LIMIT_EXCEEDED", reply
    assert reply["error"]["stage"] == "bridge" and [i["path"] for i in reply["error"]["issues"]] == [None]
    return str(reply["error"]["message"])


async def hoard(client: Client, size: int) -> tuple[list[dict[str, Any]], str]:
    """Prepare, several at a time, until refused: the tasks held, and the refusal's message."""
    held: list[dict[str, Any]] = []
    refusals: list[dict[str, Any]] = []

    async def one() -> None:
        reply = await call(client, "intent_prepare", {"instance": "orders", "input": ORDER_INPUT})
        (held if reply["kind"] == "task" else refusals).append(reply)

    for _ in range(size + 1):
        async with anyio.create_task_group() as group:
            for _ in range(HOARD_CONCURRENCY):
                group.start_soon(one)
        if refusals:
            return held, limit_message(refusals[0])
    raise AssertionError(f"never refused, holding {len(held)}")


async def release(client: Client, tasks: list[dict[str, Any]]) -> None:
    """Cancel ``tasks`` (a 2026-07-28 job has no session to end it), several at a time."""
    limiter = anyio.CapacityLimiter(HOARD_CONCURRENCY)

    async def cancel(task: dict[str, Any]) -> None:
        async with limiter:
            await call(client, "intent_cancel", {"jobId": task["jobId"]})

    async with anyio.create_task_group() as group:
        for task in tasks:
            group.start_soon(cancel, task)


async def finish(client: Client, task: dict[str, Any]) -> None:
    data_task = await accept(client, task, ORDER_CORE)
    assert data_task["kind"] == "task" and data_task["stage"] == "data", data_task
    final = await accept(client, data_task, ORDER_DATA)
    assert final["kind"] == "result" and final["result"]["data"] == {"orderId": "000123"}, final
