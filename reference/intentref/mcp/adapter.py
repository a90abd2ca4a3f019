"""The adapter: one tool call to one BridgeReply in its MCP envelope, and the SDK server that routes calls.

Seed 000 "MCP 外层返回".  Everything protocol-shaped (tasks, results, errors, job
lifecycle) belongs to :mod:`intentref.bridge`; this module only routes a call to the
session method its tool names, wraps the BridgeReply in the MCP result envelope, and
builds the low-level SDK server every transport serves (``intentref.mcp.server`` for the
stream and the whole service, ``intentref.mcp.http_app`` for streamable HTTP).

Decisions taken here are ``D-MCP-...`` in ``spec/decisions-mcp.md``.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from intentref._version import __version__
from intentref.bridge import retained_json
from intentref.core.jsontext import dumps_compact
from intentref.core.limits import well_formed_json
from intentref.core.wire import OP_OF_TOOL, PREPARE_TOOL
from intentref.mcp.capacity import Client, JobLedger, session_client
from intentref.mcp.replies import adapter_error_reply, is_bridge_reply, self_error_reply
from intentref.mcp.tools import INSTRUCTIONS, MCP_TOOLS, TOOLS_IN_WORDS

logger = logging.getLogger(__name__)

SERVER_NAME: Final = "intent-runtime"


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


# --------------------------------------------------------------------------- one call


def call_intent_tool(
    session: ToolSession, name: str, arguments: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Run one tool call against ``session`` and return its BridgeReply; never raises.

    Cancellation (BaseException) still propagates: it is the transport ending, not a fault.
    """
    try:
        method = OP_OF_TOOL.get(name)
        if method is None:
            # D-MCP-005: a tool result the model can read, not a JSON-RPC error.
            shown = json.dumps(name[:64])
            message = f"unknown tool {shown}; the tools are {TOOLS_IN_WORDS}."
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
        # A lone surrogate cannot cross a UTF-8 wire; JSON.stringify + TextEncoder would send U+FFFD (D-MCP-008).
        reply = well_formed_json(reply)
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
        if tool.name in OP_OF_TOOL or tool.name in by_name:
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
            refusal = ledger.refusal(owner) if params.name == PREPARE_TOOL else None
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


def close_session(session: ToolSession | None) -> None:
    """Close a connection's Bridge session, if it has one; a failure is logged, never raised."""
    if session is None:
        return
    try:
        session.close()
    except Exception:
        logger.exception("closing a Bridge session failed")

