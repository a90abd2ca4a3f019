"""The thin MCP adapter: three tools over a Bridge, served on stdio or streamable HTTP.

Seed 000 "MCP 外层返回" and "MCP 服务".  Everything protocol-shaped (tasks, results,
errors, job lifecycle) belongs to :mod:`intentref.bridge`; this module only declares the
tools, checks tool arguments against their declared schemas, wraps each BridgeReply in
the MCP result envelope and owns transport matters: which Bridge session a call runs
in, how a connection's end closes it, and how the process serves and stops.

Decisions taken here are ``D-MCP-...`` in ``spec/decisions-mcp.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import mcp_types as types
import uvicorn
from mcp.server import Server
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette

from intentref._version import __version__
from intentref.bridge import create_intent_bridge, retained_json
from intentref.core.jsontext import dumps_compact
from intentref.core.limits import is_well_formed, well_formed
from intentref.mcp.capacity import (
    DEFAULT_JOB_IDLE_SECONDS,
    Client,
    FairShare,
    JobLedger,
    session_client,
    stateless_client,
)
from intentref.mcp.http_guard import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_HEADER_TIMEOUT,
    PER_REQUEST_LOGGERS,
    BodyBudget,
    ListeningSocket,
    RateLimitFilter,
    RequestGuard,
    guarded_protocol,
    resource_exhaustion_handler,
)
from intentref.mcp.replies import REPLY_KINDS, adapter_error_reply, is_bridge_reply, self_error_reply
from intentref.mcp.stdio import stdio_transport

__all__ = [
    "INSTRUCTIONS",
    "MCP_TOOLS",
    "ExtraTool",
    "IntentMcpService",
    "build_intent_mcp_server",
    "call_intent_tool",
    "create_intent_mcp_http_app",
    "serve_intent_mcp",
    "serve_intent_mcp_http",
    "tool_result",
]

logger = logging.getLogger(__name__)

SERVER_NAME: Final = "intent-runtime"
MCP_PATH: Final = "/mcp"
# D-MCP-009: large enough that an oversized candidate (the core caps one at 1 MiB) still
# reaches the Bridge and gets its LIMIT_EXCEEDED reply; beyond this the transport says 413.
DEFAULT_MAX_REQUEST_BODY_SIZE: Final = 16 * 1024 * 1024
LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost", "::1")
# How long close() lets an HTTP server drain before cancelling it outright.
_GRACEFUL_STOP_SECONDS: Final = 10.0
# D-MCP-023: how long shutdown waits for terminated MCP sessions to end by themselves
# before the SDK cancels the rest; 10,000 sessions end in well under this.
_SESSION_DRAIN_SECONDS: Final = 1.0


class ToolSession(Protocol):
    """The session a tool call runs in: what the adapter needs of a ``bridge.ToolSession``."""

    def prepare(self, request: dict[str, Any]) -> Any: ...
    def accept(self, request: dict[str, Any]) -> Any: ...
    def cancel(self, request: dict[str, Any]) -> Any: ...
    def close(self) -> None: ...


class _JobSlots(Protocol):
    @property
    def max_jobs(self) -> int: ...
    @property
    def max_replay_entries(self) -> int: ...


class Bridge(Protocol):
    """What the adapter needs of an ``IntentBridge``: sessions, and (over HTTP) how full it is."""

    def connect(self) -> ToolSession: ...
    def close(self) -> None: ...
    def stats(self) -> Mapping[str, int]: ...
    @property
    def options(self) -> _JobSlots: ...


# --------------------------------------------------------------------------- tool declarations

# spec: seed 000 "工具与 session 方法" -- PrepareRequest = IntentParseRequest + instance.
_PREPARE_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "instance": {"type": "string", "description": "Name of the configured intent-runtime instance."},
        "input": {"type": "string", "description": "The user's current request text, verbatim."},
        "context": {
            "description": "Optional earlier conversation: one background text, or messages in order.",
            "anyOf": [
                {"type": "string"},
                {"type": "null"},
                {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "role": {"type": "string", "enum": ["user", "assistant", "tool"]},
                            "content": {"type": "string"},
                        },
                        "required": ["role", "content"],
                        "additionalProperties": False,
                    },
                },
            ],
        },
        "fields": {
            "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
            "description": "Top-level schema fields to extract; [] recognizes intents only; omit for all fields.",
        },
    },
    "required": ["instance", "input"],
    "additionalProperties": False,
}

_ACCEPT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "jobId": {
            "type": "string",
            "description": "jobId of the task being answered, copied from that task.",
        },
        "stepToken": {"type": "string", "description": "stepToken of the same task, copied from that task."},
        "candidateText": {
            "type": "string",
            "description": "The complete candidate as one JSON text, following the task's format.",
        },
    },
    "required": ["jobId", "stepToken", "candidateText"],
    "additionalProperties": False,
}

_CANCEL_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "jobId": {"type": "string", "description": "jobId of the job to stop."},
        "outcome": {
            "type": "string",
            "enum": ["cancelled", "refusal", "incomplete"],
            "description": "Why the job stops; cancelled when omitted.",
        },
        "detail": {"type": "string", "description": "Optional note, at most 2048 UTF-8 bytes."},
    },
    "required": ["jobId"],
    "additionalProperties": False,
}

# D-MCP-004: the BridgeReply union as outputSchema.  Root "type": "object" keeps it valid on
# the 2025 revisions too.  Each kind's branch checks only its "kind" constant and its required
# members; the members' types are annotations ("description"), which validators do not
# evaluate.  Why: every SDK client validates every result against this schema, and a branch
# that descends into each member costs that client about 4x more per call (jsonschema builds
# one sub-validator per member: 0.097 vs 0.024 ms on the seed's data task).  anyOf, not oneOf:
# the branches exclude each other by the "kind" constant, so the two accept the same replies,
# and anyOf stops at the first branch that fits.  Members stay open (no additionalProperties):
# the Bridge, not this declaration, owns the exact reply shape.
_REPLY_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"kind": {"type": "string", "enum": list(REPLY_KINDS)}},
    "required": ["kind"],
    "anyOf": [
        {
            "description": (
                "A task: jobId, stepToken, stage (core or data), instructions and payload are strings, "
                "format is an object; expiresAt (a string) only when the Bridge has a job TTL."
            ),
            "properties": {"kind": {"const": "task"}},
            "required": ["kind", "jobId", "stepToken", "stage", "instructions", "payload", "format"],
        },
        {
            "description": "The finished recognition: result is an object.",
            "properties": {"kind": {"const": "result"}},
            "required": ["kind", "result"],
        },
        {
            "description": (
                "A failure: error is an object with code, stage and message (strings), issues (an array) "
                "and, where some of the work stands, partialResult (an object)."
            ),
            "properties": {"kind": {"const": "error"}},
            "required": ["kind", "error"],
        },
    ],
}

_PREPARE_DESCRIPTION: Final = (
    "Start recognizing one user request with a configured intent-runtime instance. Pass the instance "
    "name, the user's current input verbatim, optional context (a background string, or earlier "
    "messages with role user, assistant or tool) and optional fields (top-level schema field names to "
    "extract; [] recognizes intents only; omit to extract every field). The reply is a BridgeReply in "
    'structuredContent (the same JSON is in the text content): kind "task" means end this tool call, '
    "write the complete candidate that the task's own instructions, payload and format ask for, and "
    'submit it with intent_accept; kind "result" is the finished recognition (read result); kind '
    '"error" reports why this call failed (read error.code, error.issues).'
)
_ACCEPT_DESCRIPTION: Final = (
    "Submit your candidate for the task you last received. Copy jobId and stepToken from that task "
    "exactly, never from examples or older tasks. candidateText is the whole candidate as one JSON "
    "text (JSON.stringify of the object), built from that task's instructions, payload and format; "
    "not only changed fields, not the final result, never empty. The reply is a new task (a repair or "
    "the next stage: answer it with its own new jobId and stepToken), the result, or an error. An "
    "error does not always end the job: some rejections (for example LIMIT_EXCEEDED for an oversized "
    "candidate) keep the job and stepToken active, so a corrected complete candidate can be "
    "submitted for the same task. If you will not produce a candidate, call intent_cancel instead."
)
_CANCEL_DESCRIPTION: Final = (
    'Stop a job you will not finish, so it is released. outcome: "cancelled" (default) when you '
    'abandon it, "refusal" when you decline to write the candidate, "incomplete" when you cannot '
    "write a complete one; use this instead of submitting empty or partial candidateText. detail is "
    "an optional note of at most 2048 UTF-8 bytes. The reply reports the job's terminal state: "
    "isError true here does not mean the cancel failed, and a job that already finished answers "
    "with its original terminal reply, which may be a result."
)

# spec: R-BRG-003, R-BRG-004, R-BRG-005 -- D-MCP-001: plain dicts in wire (camelCase) form,
# so a host can embed them as they are.
MCP_TOOLS: Final[list[dict[str, Any]]] = [
    {
        "name": "intent_prepare",
        "description": _PREPARE_DESCRIPTION,
        "inputSchema": _PREPARE_SCHEMA,
        "outputSchema": _REPLY_SCHEMA,
    },
    {
        "name": "intent_accept",
        "description": _ACCEPT_DESCRIPTION,
        "inputSchema": _ACCEPT_SCHEMA,
        "outputSchema": _REPLY_SCHEMA,
    },
    {
        "name": "intent_cancel",
        "description": _CANCEL_DESCRIPTION,
        "inputSchema": _CANCEL_SCHEMA,
        "outputSchema": _REPLY_SCHEMA,
    },
]

INSTRUCTIONS: Final = (
    "intent-runtime turns a user request into checked, structured intents and data. You write the "
    "candidates; the server checks them and assembles the result. The loop:\n"
    "1. Call intent_prepare with the instance name and the user's input (optional context, fields).\n"
    '2. When the reply has kind "task", end that tool call. Write the complete candidate JSON that '
    "this task's own instructions, payload and format ask for (payload is a JSON string describing "
    "the material; format.schema, when present, is the candidate's schema).\n"
    "3. Submit it with intent_accept, using that task's own jobId and stepToken and the whole "
    "candidate as candidateText.\n"
    "4. If the reply is another task (a repair, or the next stage), continue from step 2 with the "
    "new task and its new jobId and stepToken.\n"
    '5. Stop on kind "result" (read result) or kind "error" (read error.code). An error reports '
    "that one call: some rejected submissions keep the job and its stepToken active, so judge from "
    "the call you made and the last task you received, not from the code alone, whether to correct "
    "and resubmit the same task or to stop.\n"
    "Never invent jobId or stepToken values and never submit empty or partial text. If you refuse, "
    'or cannot write a complete candidate, call intent_cancel with outcome "refusal" or '
    '"incomplete"; use "cancelled" to abandon a job you no longer need.'
)

_TOOL_METHODS: Final = {"intent_prepare": "prepare", "intent_accept": "accept", "intent_cancel": "cancel"}

# --------------------------------------------------------------------------- one call


def call_intent_tool(
    session: ToolSession, name: str, arguments: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Run one tool call against ``session`` and return its BridgeReply; never raises.

    Cancellation (BaseException) still propagates: it is the transport ending, not a fault.
    """
    try:
        method = _TOOL_METHODS.get(name)
        if method is None:
            # D-MCP-005: a tool result the model can read, not a JSON-RPC error.
            shown = json.dumps(name[:64])
            message = f"unknown tool {shown}; the tools are intent_prepare, intent_accept and intent_cancel."
            return self_error_reply("BRIDGE_TOOL_NOT_FOUND", message)
        args: Any = {} if arguments is None else arguments
        # D-MCP-006: the Bridge judges the arguments itself (its parameter rules are the
        # declared inputSchema's, tests/mcp/test_schema_agreement.py), so a malformed call
        # gets the same reply over MCP as through the Bridge API: no decision is made here.
        reply = getattr(session, method)(dict(args))
        if not is_bridge_reply(reply):
            raise TypeError(f"Bridge {method}() returned {type(reply).__name__}, not a BridgeReply")
        return reply  # type: ignore[no-any-return]
    except Exception:
        # D-MCP-007: no exception reaches the SDK; the operator gets the traceback on stderr.
        logger.exception("intent-runtime tool %r failed internally", name[:64])
        return adapter_error_reply(
            "INTERNAL_ERROR",
            "the intent-runtime service failed internally while handling this call; the job's state is unknown.",
        )


def _well_formed_json(value: Any) -> Any:
    """``value`` with every lone surrogate replaced by U+FFFD, keys included (D-MCP-008)."""
    if isinstance(value, str):
        return value if is_well_formed(value) else well_formed(value)
    if isinstance(value, dict):
        return {_well_formed_json(k): _well_formed_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_well_formed_json(v) for v in value]
    return value


def tool_result(reply: dict[str, Any], reply_json: str | None = None) -> types.CallToolResult:
    """The MCP envelope of one BridgeReply (spec: seed 000 "MCP 外层返回").

    Text content is the whole reply as compact JSON, structuredContent the same object,
    and isError is true exactly when kind is "error".  ``reply_json``, when given, is that
    compact JSON already written (the Bridge's retained text, D-BRG-021).
    """
    try:
        # spec: R-ENV-001 -- the whole reply, JSON.stringify's form
        text = dumps_compact(reply) if reply_json is None else reply_json
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate cannot cross a UTF-8 wire; JSON.stringify + TextEncoder would send U+FFFD.
        reply = _well_formed_json(reply)
        text = dumps_compact(reply)
    except (TypeError, ValueError):
        logger.exception("BridgeReply is not JSON-serialisable")
        reply = adapter_error_reply("INTERNAL_ERROR", "the intent-runtime service produced a reply it cannot send.")
        text = dumps_compact(reply)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=reply,  # spec: R-ENV-002 -- the same reply as an object
        is_error=reply.get("kind") == "error",  # spec: R-ENV-003
    )


# --------------------------------------------------------------------------- server

SessionResolver = Callable[[ServerRequestContext[Any]], ToolSession]
# Who a call's client is, for the fair share (D-MCP-026): given the call and its session.
OwnerResolver = Callable[[ServerRequestContext[Any], ToolSession], Client]


@dataclass(frozen=True)
class ExtraTool:
    """A tool served beside MCP_TOOLS, for a program that builds on the reference's server.

    ``declaration`` is the tool in wire form, like an MCP_TOOLS entry (``name``,
    ``description``, ``inputSchema``, optionally ``outputSchema``); ``call`` answers it from
    the call's arguments, without the Bridge.  The reference's own command serves none
    (``intentref.devtools.bench_mcp`` adds its benchmark floors this way, D-MCP-015).
    """

    declaration: Mapping[str, Any]
    call: Callable[[Mapping[str, Any] | None], types.CallToolResult]

    @property
    def name(self) -> str:
        return str(self.declaration["name"])


def _extra_tools_by_name(extra_tools: Sequence[ExtraTool]) -> dict[str, ExtraTool]:
    by_name: dict[str, ExtraTool] = {}
    for tool in extra_tools:
        if tool.name in _TOOL_METHODS or tool.name in by_name:
            raise ValueError(f"tool name {tool.name!r} is already served")
        by_name[tool.name] = tool
    return by_name


def _call_extra_tool(tool: ExtraTool, arguments: Mapping[str, Any] | None) -> types.CallToolResult:
    try:
        return tool.call(arguments)
    except Exception:
        logger.exception("tool %r failed internally", tool.name)  # D-MCP-007, as for the intent tools
        return tool_result(adapter_error_reply("INTERNAL_ERROR", f"the tool {tool.name} failed internally."))


@contextlib.asynccontextmanager
async def _no_lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
    yield {}


def build_intent_mcp_server(
    resolve_session: SessionResolver,
    *,
    extra_tools: Sequence[ExtraTool] = (),
    lifespan: Callable[[Server[Any]], contextlib.AbstractAsyncContextManager[Any]] = _no_lifespan,
    ledger: JobLedger | None = None,
    owner_of: OwnerResolver | None = None,
) -> Server[Any]:
    """A low-level SDK server exposing MCP_TOOLS (then ``extra_tools``); ``resolve_session`` picks each call's session.

    With a ``ledger`` (HTTP), idle jobs are reclaimed before each call (D-MCP-021), a
    prepare beyond the client's fair share is refused (D-MCP-025), and each reply is
    recorded; ``owner_of`` names the client (D-MCP-026; by default, its session).
    """
    extra = _extra_tools_by_name(extra_tools)
    declarations = [*MCP_TOOLS, *(tool.declaration for tool in extra.values())]
    tools = [types.Tool.model_validate(declaration) for declaration in declarations]
    input_schemas = {str(declaration["name"]): declaration["inputSchema"] for declaration in declarations}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if (added := extra.get(params.name)) is not None:
            return _call_extra_tool(added, params.arguments)
        try:
            session = resolve_session(ctx)
        except Exception:
            logger.exception("no Bridge session for this MCP connection")
            return tool_result(
                adapter_error_reply("INTERNAL_ERROR", "the intent-runtime service has no session for this connection.")
            )
        if ledger is None:
            reply = call_intent_tool(session, params.name, params.arguments)
        else:
            ledger.reclaim_idle()
            owner = owner_of(ctx, session) if owner_of is not None else session_client(session)
            refusal = ledger.refusal(owner) if params.name == "intent_prepare" else None
            if refusal is not None:
                return tool_result(refusal)
            reply = call_intent_tool(session, params.name, params.arguments)
            ledger.record(owner, session, params.name, params.arguments, reply)
        return tool_result(reply, retained_json(reply))  # D-BRG-021: the reply is unedited here

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        # Lets 2026-07-28 HTTP header checks read our schemas without a tools/list round trip.
        get_tool_input_schema=input_schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


# --------------------------------------------------------------------------- services


class IntentMcpService:
    """A running MCP service; ``close()`` stops the protocol and closes the Bridge.

    The Intent instances passed in the config stay open: they belong to the caller
    (spec: seed 000 "MCP 服务").
    """

    def __init__(
        self,
        bridge: Bridge,
        task: asyncio.Task[None],
        url: str | None = None,
        stop: Callable[[], None] | None = None,
    ) -> None:
        self._bridge = bridge
        self._task = task
        self._stop = stop
        self._closed = False
        self.url = url
        """The streamable HTTP endpoint; None for a stream transport."""

    @property
    def bridge(self) -> Bridge:
        """The Bridge this service created (read it, e.g. ``stats()``; ``close()`` closes it)."""
        return self._bridge

    async def wait_closed(self) -> None:
        """Return when serving ends by itself (stdio: end of input); re-raise a crash."""
        await asyncio.shield(self._task)

    async def close(self) -> None:
        """Stop serving (ending every MCP session and its Bridge session), then close the Bridge.

        spec: R-SRV-003 -- complete only once both are closed; the Intents stay the caller's.
        """
        if self._closed:
            return
        self._closed = True
        try:
            # asyncio.wait never raises the task's outcome, so a cancellation of close()
            # itself still propagates instead of being mistaken for the task's.
            if not self._task.done() and self._stop is not None:
                self._stop()  # graceful: the transport winds down by itself
                await asyncio.wait({self._task}, timeout=_GRACEFUL_STOP_SECONDS)
            if not self._task.done():
                self._task.cancel()
                await asyncio.wait({self._task})
            if not self._task.cancelled():
                self._task.exception()  # retrieved: wait_closed() is where a crash is reported
        finally:
            self._bridge.close()


def _split_config(config: Mapping[str, Any], transport: Any) -> tuple[dict[str, Any], Any]:
    # spec: seed 000 "MCP 服务" -- BridgeConfig & { transport? }; the keyword form works too.
    bridge_config = dict(config)
    if "transport" in bridge_config:
        if transport is not None:
            raise ValueError("transport is given both in config and as an argument")
        transport = bridge_config.pop("transport")
    return bridge_config, transport


def _close_session(session: ToolSession | None) -> None:
    if session is None:
        return
    try:
        session.close()
    except Exception:
        logger.exception("closing a Bridge session failed")


async def _start(
    run: Callable[[asyncio.Event], Any],
    bridge: Bridge,
    url: str | None = None,
    stop: Callable[[], None] | None = None,
) -> IntentMcpService:
    """Run ``run(started)`` in the background and return once it has set ``started``."""
    started = asyncio.Event()

    async def body() -> None:
        try:
            await run(started)
        finally:
            started.set()  # a failed start must not leave the caller waiting

    task = asyncio.create_task(body(), name="intent-runtime-mcp")
    await started.wait()
    if task.done() and not task.cancelled() and (failure := task.exception()) is not None:
        bridge.close()
        raise failure
    return IntentMcpService(bridge, task, url, stop)


class _StreamSession:
    """The one Bridge session of a stream connection (stdio or a caller's transport)."""

    def __init__(self) -> None:
        self.current: ToolSession | None = None

    def resolve(self, ctx: ServerRequestContext[Any]) -> ToolSession:
        if self.current is None:
            raise RuntimeError("the stream connection has no open Bridge session")
        return self.current


async def serve_intent_mcp(
    config: Mapping[str, Any], transport: Any = None, *, extra_tools: Sequence[ExtraTool] = ()
) -> IntentMcpService:
    """Serve MCP_TOOLS over ``transport`` (default: this process's stdio; spec: R-SRV-001, R-SRV-002).

    ``config`` is a BridgeConfig (``instances`` plus any capacity option).  ``transport`` is
    an async context manager yielding ``(read_stream, write_stream)`` -- the shape of
    ``mcp.server.stdio.stdio_server()`` -- or such a pair already open.  The service serves
    in the background until ``close()`` or the end of the stream; both eras are served,
    the client's first request picks one.  ``extra_tools`` are served beside MCP_TOOLS
    (``ExtraTool``; the seed's call form has none).
    """
    bridge_config, transport = _split_config(config, transport)
    holder = _StreamSession()
    server = build_intent_mcp_server(holder.resolve, extra_tools=extra_tools)
    bridge: Bridge = create_intent_bridge(bridge_config)

    async def run(started: asyncio.Event) -> None:
        opened: contextlib.AbstractAsyncContextManager[Any]
        if transport is None:
            opened = stdio_transport()  # D-MCP-011
        elif isinstance(transport, tuple):
            opened = contextlib.nullcontext(transport)
        else:
            opened = transport
        async with opened as (read_stream, write_stream):
            # D-MCP-002: a stream is one connection in either era, so one session serves it;
            # the 2026-07-28 loop builds a fresh SDK Connection per request, so the session
            # is bound to the stream, not to that object.
            holder.current = bridge.connect()
            try:
                started.set()
                await server.run(read_stream, write_stream, server.create_initialization_options())
            finally:
                session, holder.current = holder.current, None
                _close_session(session)

    return await _start(run, bridge)


# --------------------------------------------------------------------------- streamable HTTP

_SESSION_KEY: Final = "intentref.bridge_session"


def _connection_of(ctx: ServerRequestContext[Any]) -> Connection:
    # The SDK documents Connection.state / exit_stack for per-connection resources but the
    # low-level handler context does not expose the Connection yet (its TODO L54); this is
    # the one place that reaches for it, and the HTTP tests fail loudly if it moves.
    connection = getattr(ctx.session, "_connection", None)
    if not isinstance(connection, Connection):
        raise RuntimeError("the installed mcp SDK no longer exposes the request's Connection")
    return connection


class _HttpSessions:
    """Bridge sessions of one streamable-HTTP app.

    Handshake era: one session per MCP session (Mcp-Session-Id), closed when the SDK
    ends that session -- DELETE, idle timeout or shutdown (D-MCP-002).  2026-07-28 era:
    requests carry no session at all, so one shared session owns their jobs (D-MCP-003).
    """

    def __init__(self, bridge: Bridge, ledger: JobLedger) -> None:
        self._bridge = bridge
        self._stateless: ToolSession | None = None
        self.ledger = ledger

    def owner(self, ctx: ServerRequestContext[Any], session: ToolSession) -> Client:
        """The client a call counts against (D-MCP-026).

        Handshake era: its MCP session.  2026-07-28 era: the TCP peer's address (uvicorn is
        told not to rewrite it from forwarded headers) with the clientInfo the request's
        ``_meta`` declares, which the SDK has read into the request's connection.
        """
        if session is not self._stateless:
            return session_client(session)
        peer = getattr(ctx.request, "client", None)
        params = ctx.session.client_params
        info = None if params is None else (params.client_info.name, params.client_info.version)
        return stateless_client(getattr(peer, "host", None), info)

    def resolve(self, ctx: ServerRequestContext[Any]) -> ToolSession:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if self._stateless is None:
                self._stateless = self._bridge.connect()
            return self._stateless
        connection = _connection_of(ctx)
        session: ToolSession | None = connection.state.get(_SESSION_KEY)
        if session is None:
            session = self._bridge.connect()
            connection.state[_SESSION_KEY] = session
            connection.exit_stack.callback(_close_session, session)  # spec: R-LIF-012
            connection.exit_stack.callback(self.ledger.forget_session, session)
        return session

    @contextlib.asynccontextmanager
    async def lifespan(self, _: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            session, self._stateless = self._stateless, None
            _close_session(session)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _security(
    host: str, allowed_hosts: list[str] | None, allowed_origins: list[str] | None
) -> TransportSecuritySettings:
    """DNS-rebinding protection, always on (D-MCP-010)."""
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    if host not in (*LOOPBACK_HOSTS, "0.0.0.0", "::", ""):
        hosts.append(f"{_url_host(host)}:*")
        origins.append(f"http://{_url_host(host)}:*")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts + list(allowed_hosts or ()),
        allowed_origins=origins + list(allowed_origins or ()),
    )


def create_intent_mcp_http_app(
    bridge: Bridge,
    *,
    host: str = "127.0.0.1",
    allowed_hosts: list[str] | None = None,
    allowed_origins: list[str] | None = None,
    max_request_body_size: int = DEFAULT_MAX_REQUEST_BODY_SIZE,
    max_jobs_per_client: int | None = None,
    job_idle_seconds: float | None = DEFAULT_JOB_IDLE_SECONDS,
    body_budget: BodyBudget | None = None,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    extra_tools: Sequence[ExtraTool] = (),
) -> Starlette:
    """A Starlette app serving MCP_TOOLS at ``/mcp`` in both eras, for any ASGI server.

    Its lifespan must run (it starts the SDK's session manager).  The Bridge stays the
    caller's to close, after the app has shut down.  The fair share (D-MCP-025) follows the
    Bridge's size: ``max_jobs_per_client`` may lower the per-client limit from half the
    Bridge's job slots (None), never raise it (ValueError); ``job_idle_seconds`` reclaims
    jobs without progress (D-MCP-021; None: never).  ``body_budget`` and ``body_timeout``
    bound request bodies in flight (D-MCP-022, D-MCP-023).
    """
    slots = min(bridge.options.max_jobs, bridge.options.max_replay_entries)  # active jobs fill either
    share = FairShare.of(slots, max_jobs_per_client)
    sessions = _HttpSessions(bridge, JobLedger(share, lambda: bridge.stats()["activeJobs"], job_idle_seconds))
    server = build_intent_mcp_server(
        sessions.resolve,
        extra_tools=extra_tools,
        lifespan=sessions.lifespan,
        ledger=sessions.ledger,
        owner_of=sessions.owner,
    )
    security = _security(host, allowed_hosts, allowed_origins)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=security,
        max_request_body_size=max_request_body_size,
        host=host,
    )
    # D-MCP-022: in front of everything the SDK does, so Host/Origin are judged on the
    # headers and the body is read once, timed and budgeted.
    app.state.intent_session_manager = server.session_manager  # ending sessions quickly (D-MCP-023)
    app.add_middleware(
        RequestGuard,
        security=security,
        max_body_size=max_request_body_size,
        budget=body_budget or BodyBudget(),
        body_timeout=body_timeout,
    )
    return app


class _UvicornServer(uvicorn.Server):
    async def shutdown(self, sockets: Any = None) -> None:
        # D-MCP-023: end every MCP session by closing its transport, and let the sessions
        # wind down by themselves, before the SDK cancels its task group: cancelling
        # thousands of live session tasks at once costs anyio time quadratic in their
        # number (13 s for 10,000 sessions).  The SDK keeps no public list of its sessions;
        # without one (another SDK version) this step is skipped and shutdown is as before.
        manager = getattr(getattr(self.config.app, "state", None), "intent_session_manager", None)
        sessions = getattr(manager, "_server_instances", None)
        if isinstance(sessions, dict) and sessions:
            for transport in list(sessions.values()):
                with contextlib.suppress(Exception):
                    await transport.terminate()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + _SESSION_DRAIN_SECONDS
            while sessions and loop.time() < deadline:
                await asyncio.sleep(0.005)
        await super().shutdown(sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn re-raises a caught SIGTERM after shutdown, which would end the process
        # with that signal instead of status 0; the embedding program owns signals.
        yield


async def serve_intent_mcp_http(
    config: Mapping[str, Any],
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    allowed_hosts: list[str] | None = None,
    allowed_origins: list[str] | None = None,
    max_request_body_size: int = DEFAULT_MAX_REQUEST_BODY_SIZE,
    max_jobs_per_client: int | None = None,
    job_idle_seconds: float | None = DEFAULT_JOB_IDLE_SECONDS,
    body_budget: BodyBudget | None = None,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    extra_tools: Sequence[ExtraTool] = (),
) -> IntentMcpService:
    """Serve MCP_TOOLS over streamable HTTP at ``http://host:port/mcp`` (port 0: any free one).

    Loopback by default, with the SDK's DNS-rebinding protection on.  ``service.url`` is
    the bound endpoint; ``close()`` stops the server, ends every session and closes the
    Bridge.
    """
    bridge: Bridge = create_intent_bridge(dict(config))
    try:
        app = create_intent_mcp_http_app(
            bridge,
            host=host,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            max_request_body_size=max_request_body_size,
            max_jobs_per_client=max_jobs_per_client,
            job_idle_seconds=job_idle_seconds,
            body_budget=body_budget,
            body_timeout=body_timeout,
            extra_tools=extra_tools,
        )
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = ListeningSocket.adopt(socket.create_server((host, port), family=family))  # D-MCP-023
    except BaseException:
        bridge.close()
        raise
    bound = sock.getsockname()[1]
    uv = _UvicornServer(
        uvicorn.Config(
            app,
            log_config=None,
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=3,
            # D-MCP-026: the peer address is the TCP peer's.  uvicorn would otherwise take it
            # from X-Forwarded-For when the peer is 127.0.0.1, which any local process can send.
            proxy_headers=False,
            http=guarded_protocol(header_timeout),  # D-MCP-023: uvicorn has no header timeout
        )
    )

    log_filter = RateLimitFilter()  # D-MCP-023: a client must not be able to flood the log

    async def run(started: asyncio.Event) -> None:
        for name in PER_REQUEST_LOGGERS:
            logging.getLogger(name).addFilter(log_filter)
        loop = asyncio.get_running_loop()
        previous_handler = loop.get_exception_handler()
        loop.set_exception_handler(resource_exhaustion_handler(previous_handler))  # D-MCP-023
        serving = asyncio.create_task(uv.serve(sockets=[sock]))
        try:
            while not uv.started and not serving.done():
                await asyncio.sleep(0.01)
            if uv.started:
                started.set()
            await serving
        finally:
            sock.close()
            loop.set_exception_handler(previous_handler)
            for name in PER_REQUEST_LOGGERS:
                logging.getLogger(name).removeFilter(log_filter)

    def stop() -> None:
        uv.should_exit = True  # uvicorn's own graceful path: lifespan exit ends every session

    return await _start(run, bridge, f"http://{_url_host(host)}:{bound}{MCP_PATH}", stop)
