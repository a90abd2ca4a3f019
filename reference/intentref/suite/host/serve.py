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
  reply is reworded (the code, stage, paths and everything else unchanged);
* ``era``: ``"auto"`` (default: both, as the reference serves them), ``"2026"`` or ``"legacy"``
  — the one MCP era served; a request of the other era is refused as a server of one era
  refuses it (``intentref host --era``, D-CNF-066).
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
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST, METHOD_NOT_FOUND, UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from intentref import Intent
from intentref._paths import data_dir
from intentref.bridge import create_intent_bridge
from intentref.mcp.adapter import SERVER_NAME, call_intent_tool, tool_result
from intentref.mcp.http_app import DEFAULT_MAX_REQUEST_BODY_SIZE
from intentref.mcp.stdio import stdio_transport
from intentref.mcp.tools import INSTRUCTIONS, MCP_TOOLS

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

    def write(self, event: str, connection: str | None = None, **fields: Any) -> None:
        line = json.dumps({"event": event, "connection": connection or self.connection, "t": time.time(), **fields},
                          ensure_ascii=False)  # fmt: skip
        os.write(self._fd, (line + "\n").encode("utf-8", "surrogatepass"))


def _active_jobs(session: Any) -> list[str]:
    # The session's own jobs that are not terminal.  The Bridge keeps these private; the
    # recorder reads them (and nothing else) so the judge knows which jobs a host left open.
    store = getattr(session, "_store", None)
    mine: set[str] = getattr(session, "_job_ids", set())
    active = getattr(store, "active", {})
    return sorted(job for job in mine if job in active)


# Which Bridge session (and connection name) a tool call belongs to.
ConnectionResolver = Callable[[ServerRequestContext[Any]], tuple[Any, str]]


def request_era(method: str, protocol_version: str) -> str:
    """The era a request belongs to: ``2026`` (2026-07-28) or ``legacy`` (the initialize handshake)."""
    if method == "initialize" or protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return "legacy"
    return "2026"


def refusal_of_the_other_era(served: str, method: str) -> MCPError:
    """How a server speaking only ``served`` answers a request of the other era (D-CNF-066)."""
    if served == "2026":
        # As the 2026-07-28 runner answers an initialize: the versions it does speak, so a
        # client in auto mode knows to stay modern.
        return MCPError(UNSUPPORTED_PROTOCOL_VERSION, "this server speaks only the 2026-07-28 era (--era 2026)",
                        {"supported": list(MODERN_PROTOCOL_VERSIONS)})  # fmt: skip
    if method == "server/discover":
        # What any handshake-era server answers: a client in auto mode falls back to initialize.
        return MCPError(METHOD_NOT_FOUND, "Method not found", method)
    return MCPError(INVALID_REQUEST, "this server speaks only the initialize handshake (--era legacy)",
                    {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS)})  # fmt: skip


def era_pin(served: str) -> Any:
    """Server middleware refusing every request that is not of the era ``served``."""

    async def pin(ctx: Any, call_next: Any) -> Any:
        if ctx.request_id is not None and request_era(ctx.method, ctx.protocol_version) != served:
            raise refusal_of_the_other_era(served, ctx.method)
        return await call_next(ctx)

    return pin


def build_server(connections: ConnectionResolver | Any, recorder: Recorder, behaviour: Mapping[str, Any],
                 lifespan: Any = None) -> Server[Any]:  # fmt: skip
    """The recording server; ``connections`` is one Bridge session (a stream) or a resolver (HTTP)."""
    if not callable(connections):
        session, name = connections, recorder.connection
        connections = lambda ctx: (session, name)  # noqa: E731 -- one stream, one connection
    resolve: ConnectionResolver = connections
    faults = {int(f["call"]): str(f["kind"]) for f in behaviour.get("faults", [])}
    alternate = behaviour.get("wording", "reference") == "alternate"
    tools = [types.Tool.model_validate(declaration) for declaration in MCP_TOOLS]
    calls: dict[str, int] = {}  # per connection: a fault names the N-th call of a connection

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        session, name = resolve(ctx)
        calls[name] = number = calls.get(name, 0) + 1
        arguments = dict(params.arguments or {})
        fault = faults.get(number)
        record = {"call": number, "tool": params.name, "arguments": arguments, "fault": fault,
                  "protocol": ctx.protocol_version}  # fmt: skip
        if fault == "jsonrpc_error":
            recorder.write("call", name, **record, reply=None, active=_active_jobs(session))
            raise MCPError(FAULT_RPC_CODE, "the call was refused by the protocol layer (scripted fault)")
        if fault == "not_a_reply":
            recorder.write("call", name, **record, reply=None, active=_active_jobs(session))
            text = "internal failure before the Bridge (scripted fault)"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
        reply = call_intent_tool(session, params.name, arguments)
        if alternate:
            reply = reword(reply)
        recorder.write("call", name, **record, reply=reply, active=_active_jobs(session))
        return tool_result(reply)

    extra: dict[str, Any] = {} if lifespan is None else {"lifespan": lifespan}
    server = Server(SERVER_NAME, instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool, **extra)
    era = behaviour.get("era", "auto")
    if era != "auto":
        server.middleware.append(era_pin(era))
    return server


def suite_instances() -> dict[str, Any]:
    configs = json.loads((data_dir("conformance") / "instances.json").read_text("utf-8"))["instances"]
    return {name: Intent(config) for name, config in configs.items()}


_SESSION_KEY: Final = "intentref.host.session"


class HttpConnections:
    """Bridge sessions over streamable HTTP, mapped as the reference maps them.

    Handshake era: one session per MCP session, closed when the SDK ends it (D-MCP-002).
    2026-07-28 era: requests carry no session, so one shared session owns their jobs
    (D-MCP-003).  A connection is logged without a pid: the judge owns this server, so
    "the host left its server running" (R-HST-013) is not asked over HTTP (D-HST-010).
    """

    def __init__(self, bridge: Any, recorder: Recorder) -> None:
        self._bridge = bridge
        self._recorder = recorder
        self._stateless: Any = None
        self._count = 0

    def resolve(self, ctx: ServerRequestContext[Any]) -> tuple[Any, str]:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if self._stateless is None:
                self._stateless = self._bridge.connect()
                self._recorder.write("open", "http-stateless", pid=None)
            return self._stateless, "http-stateless"
        connection = getattr(ctx.session, "_connection", None)  # as intentref.mcp.server reaches it
        if connection is None:
            raise RuntimeError("the installed mcp SDK no longer exposes the request's Connection")
        found: tuple[Any, str] | None = connection.state.get(_SESSION_KEY)
        if found is None:
            self._count += 1
            found = (self._bridge.connect(), f"http-{self._count}")
            connection.state[_SESSION_KEY] = found
            self._recorder.write("open", found[1], pid=None)
            connection.exit_stack.callback(self._closed, *found)
        return found

    def _closed(self, session: Any, name: str) -> None:
        self._recorder.write("close", name, reason="session ended", active=_active_jobs(session))
        session.close()

    @contextlib.asynccontextmanager
    async def lifespan(self, _: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            if self._stateless is not None:
                self._closed(self._stateless, "http-stateless")
                self._stateless = None


async def serve_http(log: str, behaviour: Mapping[str, Any]) -> None:
    """Serve at ``http://127.0.0.1:PORT/mcp`` (a free port), printed as ``url URL`` on stdout."""
    import socket

    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from intentref.mcp.http_guard import ListeningSocket

    # Its connections send at once (D-MCP-029): a host that keeps connections alive is not
    # held up by Nagle's algorithm here any more than by the reference's own server.
    sock = ListeningSocket.adopt(socket.create_server(("127.0.0.1", 0)))
    # The socket already listens: a host may connect as soon as it reads the line, while the
    # server is still being built (its start overlaps the host's, D-HST-011).
    print(f"url http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    recorder = Recorder(log, "http")
    bridge = create_intent_bridge({"instances": suite_instances()})
    connections = HttpConnections(bridge, recorder)
    server = build_server(connections.resolve, recorder, behaviour, lifespan=connections.lifespan)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=["127.0.0.1:*"],
                                         allowed_origins=["http://127.0.0.1:*"])  # fmt: skip
    app = server.streamable_http_app(streamable_http_path="/mcp", transport_security=security, host="127.0.0.1",
                                     max_request_body_size=DEFAULT_MAX_REQUEST_BODY_SIZE)  # fmt: skip
    uv = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=False, lifespan="on",
                                       timeout_graceful_shutdown=3))  # fmt: skip
    try:
        await uv.serve(sockets=[sock])
    finally:
        sock.close()
        bridge.close()


async def serve(log: str, behaviour: Mapping[str, Any]) -> None:
    recorder = Recorder(log, f"{os.getpid()}-{time.monotonic_ns() % 1_000_000}")
    bridge = create_intent_bridge({"instances": suite_instances()})
    session = bridge.connect()
    server = build_server(session, recorder, behaviour)
    recorder.write("open", pid=os.getpid())
    reason = "end of input"
    try:
        async with stdio_transport() as (read_stream, write_stream):
            await serve_stream(server, read_stream, write_stream, behaviour.get("era", "auto"))
    except asyncio.CancelledError:
        reason = "signal"
        raise
    finally:
        # Logged before the session closes: these are the jobs the host left for the close to release.
        recorder.write("close", reason=reason, active=_active_jobs(session))
        session.close()
        bridge.close()


async def serve_stream(server: Server[Any], read_stream: Any, write_stream: Any, era: str) -> None:
    """One stdio connection in ``era``: both as the SDK serves them (``auto``), or the one pinned.

    A pinned era runs the SDK's own loop of that era, which refuses the other era's opening
    as a server of one era does (D-CNF-066): a client in auto mode that probes with
    ``server/discover`` may still fall back to the handshake on the same connection.
    """
    if era == "auto":
        await server.run(read_stream, write_stream, server.create_initialization_options())
        return
    from mcp.server.runner import (  # the SDK has no public one-era loop
        _serve_legacy_stream,
        _serve_modern_stream,
    )

    async with server.lifespan(server) as state:
        try:
            if era == "2026":
                await _serve_modern_stream(server, read_stream, write_stream, lifespan_state=state,
                                           raise_exceptions=False)  # fmt: skip
            else:
                await _serve_legacy_stream(server, read_stream, write_stream, lifespan_state=state, session_id=None,
                                           init_options=server.create_initialization_options(),
                                           raise_exceptions=False)  # fmt: skip
        finally:
            await write_stream.aclose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="intentref-host-serve", description=__doc__.split("\n")[0])
    parser.add_argument("--log", required=True)
    parser.add_argument("--behaviour")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP on a free loopback port")
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
        # Over HTTP uvicorn owns SIGTERM: its graceful stop ends every session, which logs each close.
        asyncio.run(serve_http(args.log, behaviour) if args.http else run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
