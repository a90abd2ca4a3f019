"""The judge's MCP server: the reference Bridge behind a recording proxy (D-HST-007).

    python -m intentref.suite.host.serve --log FILE [--behaviour FILE]

One process is one MCP connection over stdio, and so one Bridge session.  Every tool call
is appended to ``--log`` as one JSON line with its arguments, the reply sent and the jobs
of this connection still active afterwards; the connection's start and end are logged too.
``--behaviour`` names a JSON file of server behaviours a scenario asks for:

* ``faults``: ``[{"call": N, "kind": "jsonrpc_error" | "not_a_reply"}]`` — the N-th tool
  call of this connection (1-based) is not passed to the Bridge: it gets a JSON-RPC error,
  or an ``isError`` result whose content is plain text and which has no structuredContent;
* ``wording``: ``"reference"`` (default) or ``"alternate"`` — every ``message`` of an error
  reply is reworded (the code, stage, paths and everything else unchanged).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Mapping
from typing import Any, Final

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from intentref import Intent
from intentref._paths import data_dir
from intentref.bridge import create_intent_bridge
from intentref.mcp.server import INSTRUCTIONS, MCP_TOOLS, SERVER_NAME, call_intent_tool, tool_result
from intentref.mcp.stdio import stdio_transport

FAULT_KINDS: Final = ("jsonrpc_error", "not_a_reply")
WORDINGS: Final = ("reference", "alternate")
# A JSON-RPC error code an SDK or protocol layer might send for a refused call.
FAULT_RPC_CODE: Final = -32603


def reword(reply: dict[str, Any]) -> dict[str, Any]:
    """``reply`` with every error message worded differently, nothing else changed.

    The new wording shares no word with the reference's, so a host that looks for a word
    of either behaves differently under the other (R-HST-011).
    """
    if reply.get("kind") != "error" or not isinstance(reply.get("error"), dict):
        return reply
    error = dict(reply["error"])
    code = str(error.get("code"))
    error["message"] = f"[{code}] call declined (alternate wording)."
    if isinstance(error.get("issues"), list):
        error["issues"] = [
            {**issue, "message": f"[{issue.get('code')}] issue at {issue.get('path')} (alternate wording)."}
            if isinstance(issue, dict) else issue
            for issue in error["issues"]
        ]  # fmt: skip
    return {**reply, "error": error}


class Recorder:
    """Appends one JSON line per event to the log; ``O_APPEND`` keeps connections' lines whole."""

    def __init__(self, path: str, connection: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.connection = connection

    def write(self, event: str, **fields: Any) -> None:
        line = json.dumps({"event": event, "connection": self.connection, "t": time.time(), **fields},
                          ensure_ascii=False)  # fmt: skip
        os.write(self._fd, (line + "\n").encode("utf-8", "surrogatepass"))


def _active_jobs(session: Any) -> list[str]:
    # The session's own jobs that are not terminal.  The Bridge keeps these private; the
    # recorder reads them (and nothing else) so the judge knows which jobs a host left open.
    store = getattr(session, "_store", None)
    mine: set[str] = getattr(session, "_job_ids", set())
    active = getattr(store, "active", {})
    return sorted(job for job in mine if job in active)


def build_server(session: Any, recorder: Recorder, behaviour: Mapping[str, Any]) -> Server[Any]:
    faults = {int(f["call"]): str(f["kind"]) for f in behaviour.get("faults", [])}
    alternate = behaviour.get("wording", "reference") == "alternate"
    tools = [types.Tool.model_validate(declaration) for declaration in MCP_TOOLS]
    calls = 0

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        nonlocal calls
        calls += 1
        arguments = dict(params.arguments or {})
        fault = faults.get(calls)
        if fault == "jsonrpc_error":
            recorder.write("call", call=calls, tool=params.name, arguments=arguments, fault=fault,
                           reply=None, active=_active_jobs(session))  # fmt: skip
            raise MCPError(FAULT_RPC_CODE, "the call was refused by the protocol layer (scripted fault)")
        if fault == "not_a_reply":
            recorder.write("call", call=calls, tool=params.name, arguments=arguments, fault=fault,
                           reply=None, active=_active_jobs(session))  # fmt: skip
            return types.CallToolResult(
                content=[
                    types.TextContent(type="text", text="internal failure before the Bridge (scripted fault)")
                ],
                is_error=True,
            )
        reply = call_intent_tool(session, params.name, arguments)
        if alternate:
            reply = reword(reply)
        recorder.write("call", call=calls, tool=params.name, arguments=arguments, fault=None,
                       reply=reply, active=_active_jobs(session))  # fmt: skip
        return tool_result(reply)

    return Server(SERVER_NAME, instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)


def suite_instances() -> dict[str, Any]:
    configs = json.loads((data_dir("conformance") / "instances.json").read_text("utf-8"))["instances"]
    return {name: Intent(config) for name, config in configs.items()}


async def serve(log: str, behaviour: Mapping[str, Any]) -> None:
    recorder = Recorder(log, f"{os.getpid()}-{time.monotonic_ns() % 1_000_000}")
    bridge = create_intent_bridge({"instances": suite_instances()})
    session = bridge.connect()
    server = build_server(session, recorder, behaviour)
    recorder.write("open", pid=os.getpid())
    reason = "end of input"
    try:
        async with stdio_transport() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    except asyncio.CancelledError:
        reason = "signal"
        raise
    finally:
        # Logged before the session closes: these are the jobs the host left for the close to release.
        recorder.write("close", reason=reason, active=_active_jobs(session))
        session.close()
        bridge.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="intentref-host-serve", description=__doc__.split("\n")[0])
    parser.add_argument("--log", required=True)
    parser.add_argument("--behaviour")
    args = parser.parse_args(argv)
    behaviour: dict[str, Any] = {}
    if args.behaviour:
        with open(args.behaviour, encoding="utf-8") as file:
            behaviour = json.load(file)

    async def run() -> None:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            # A host's SDK ends its server with SIGTERM; cancelling lets the close be logged.
            loop.add_signal_handler(signum, lambda: task.cancel() if task else None)
        await serve(args.log, behaviour)

    with contextlib.suppress(asyncio.CancelledError, KeyboardInterrupt):
        asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
