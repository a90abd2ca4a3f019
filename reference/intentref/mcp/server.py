"""The MCP service: serve the three tools over a Bridge, on stdio (or any stream) or streamable HTTP.

Seed 000 "MCP 服务".  This is the public API a program imports: ``serve_intent_mcp`` and
``serve_intent_mcp_http`` build a Bridge from a config and serve it until ``close()``;
the names a program builds its own server from are re-exported here from the modules that
define them: the declarations (``intentref.mcp.tools``), the adapter that answers one call
(``intentref.mcp.adapter``) and the streamable-HTTP app (``intentref.mcp.http_app``).
What this module owns is how the process serves and stops: which Bridge session a stream
runs in, uvicorn, and closing the service.

Decisions taken here are ``D-MCP-...`` in ``spec/decisions-mcp.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

import anyio
import uvicorn
from mcp.server.context import ServerRequestContext

from intentref.bridge import create_intent_bridge
from intentref.mcp.adapter import (
    Bridge,
    ExtraTool,
    ToolSession,
    build_intent_mcp_server,
    call_intent_tool,
    close_session,
    tool_result,
)
from intentref.mcp.http_app import MCP_PATH, create_intent_mcp_http_app, url_host
from intentref.mcp.http_guard import (
    DEFAULT_HEADER_TIMEOUT,
    PER_REQUEST_LOGGERS,
    ListeningSocket,
    RateLimitFilter,
    guarded_protocol,
    resource_exhaustion_handler,
)
from intentref.mcp.stdio import stdio_transport
from intentref.mcp.tools import INSTRUCTIONS, MCP_TOOLS

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

# How long close() lets an HTTP server drain before cancelling it outright.
_GRACEFUL_STOP_SECONDS: Final = 10.0
# D-MCP-023: how long shutdown waits for terminated MCP sessions to end by themselves
# before the SDK cancels the rest; 10,000 sessions end in well under this.
_SESSION_DRAIN_SECONDS: Final = 1.0


# --------------------------------------------------------------------------- the service


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


# --------------------------------------------------------------------------- a stream: stdio or the caller's


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
                close_session(session)

    return await _start(run, bridge)


# --------------------------------------------------------------------------- streamable HTTP, served by uvicorn


def _one_line_if_a_stream_closed(record: logging.LogRecord) -> bool:
    """D-MCP-037: a request that meets its session's closed stream is logged without its traceback."""
    failure = record.exc_info[1] if record.exc_info else None
    if failure is not None:
        group = failure if isinstance(failure, BaseExceptionGroup) else BaseExceptionGroup("", [failure])
        if group.split((anyio.ClosedResourceError, anyio.BrokenResourceError))[1] is None:
            record.msg, record.args = f"{record.getMessage()} (its session's stream was closed)", None
            record.exc_info = record.exc_text = None
    return True


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
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    auth_resource: str | None = None,
    **app_options: Any,
) -> IntentMcpService:
    """Serve MCP_TOOLS over streamable HTTP at ``http://host:port/mcp`` (port 0: any free one).

    Loopback by default, with the SDK's DNS-rebinding protection on.  ``service.url`` is
    the bound endpoint; ``close()`` stops the server, ends every session and closes the
    Bridge.  ``app_options`` are ``create_intent_mcp_http_app``'s; with a ``token_verifier``
    every request needs a bearer token (D-MCP-030), and the metadata names ``auth_resource``,
    else ``service.url``, as the app's ``resource_url`` (D-MCP-033).
    """
    bridge: Bridge = create_intent_bridge(dict(config))
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = ListeningSocket.adopt(socket.create_server((host, port), family=family))  # D-MCP-023
    except BaseException:
        bridge.close()
        raise
    url = f"http://{url_host(host)}:{sock.getsockname()[1]}{MCP_PATH}"
    try:
        app = create_intent_mcp_http_app(bridge, host=host, resource_url=auth_resource or url, **app_options)
    except BaseException:
        sock.close()
        bridge.close()
        raise
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
            logging.getLogger(name).addFilter(_one_line_if_a_stream_closed)
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
                logging.getLogger(name).removeFilter(_one_line_if_a_stream_closed)
                logging.getLogger(name).removeFilter(log_filter)

    def stop() -> None:
        uv.should_exit = True  # uvicorn's own graceful path: lifespan exit ends every session

    return await _start(run, bridge, url, stop)
