"""The MCP client the MCP targets share: one connection, its era, and the runs and sessions made of connections.

A ``Connection`` drives a server through the MCP SDK's own ``Client`` on an event loop in a
background thread, so the synchronous runner can call it; how it reaches the server (a
process's pipes, streamable HTTP) is its target's business (``mcp_stdio``, ``mcp_http``).

A run keeps its connections while it lasts: a case's session hands its connection back when
the case is over (the runner has ended its jobs), and the next case takes it (D-CNF-002).  A
connection a case closed is not handed to that case again: a reopened session is another
Bridge session, as a new process would be.

The era (``2026`` for 2026-07-28, ``legacy`` for the initialize handshake) may be ``auto``:
the first connection negotiates it (``server/discover``, falling back to ``initialize``)
and every later one uses what it found (D-CNF-052).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import anyio
import httpx2
import mcp_types as types
import pydantic
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from intentref.core.limits import has_lone_surrogate
from intentref.core.wire import CANCEL_TOOL, TOOL_OF_OP
from intentref.mcp.replies import is_bridge_reply
from intentref.suite.targets import recording
from intentref.suite.targets.base import (
    CallSession,
    EraRefused,
    ProtocolRefusal,
    Reply,
    RequestDropped,
    Run,
    ServerExited,
    Session,
    Target,
    TargetCannotStart,
    TargetUnsupported,
)
from intentref.suite.targets.base import connections_of as connections_of  # its home before D-CNF-063
from intentref.suite.targets.harness import dumps_wire
from intentref.suite.targets.transport import CLOSE_GRACE, ProcessInfo, tapped

# Seconds a server that broke off its start-up gets to be reaped, so its exit status can be
# shown; a process that never existed is not waited for at all.
PROCESS_REAP_WAIT: Final = 3.0
# Seconds a server that left a request unanswered gets to answer a tools/list instead: if it
# does, it is alive and dropped that request (D-CNF-053).
ALIVE_CHECK_TIMEOUT: Final = 2.0
# Seconds a request holding a lone surrogate is waited for before that check (D-CNF-053).
LONE_SURROGATE_WAIT: Final = 3.0
ERAS: Final = ("2026", "legacy", "auto")
_CLIENT_MODES: Final = {"2026": "2026-07-28", "legacy": "legacy", "auto": "auto"}  # our name -> Client(mode=...)
# A pinned era: its name in a message, and the other era, which a server refusing it may speak instead.
_PINNED: Final = {"2026": ("the 2026-07-28 era", "legacy"), "legacy": ("the initialize handshake", "2026")}

# --------------------------------------------------------------------------- case analysis


def _same_json(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``, member order does not matter."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def reply_of(result: types.CallToolResult) -> Reply:
    """The Reply of one tools/call: structuredContent, its text block and the envelope facts."""
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    text = texts[0] if texts else None
    value = result.structured_content
    is_error, single = bool(result.is_error), len(result.content) == 1

    def envelope() -> dict[str, Any]:
        return {"isError": is_error, "textIsReply": single and text is not None and _text_is(text, value)}

    return Reply(value, text, envelope_of=envelope)


def _text_is(text: str, value: Any) -> bool:
    # Fast path first: a server that writes the object it put in structuredContent produces
    # exactly this text, and a deep comparison of every task costs more than the rest of the call.
    if text == dumps_wire(value):
        return True
    try:
        return _same_json(json.loads(text), value)
    except ValueError:
        return False


# --------------------------------------------------------------------------- connections


class Connection:
    """One MCP client connection, held open by a task on the portal's event loop.

    Construction starts it; ``wait()`` blocks until the server has answered (or raises
    why it did not), so a target can start connections ahead of need (prefetch).  The
    target's ``era`` gives the Client mode and learns what ``auto`` found.
    """

    def __init__(self, target: McpTarget, make_transport: Callable[[], Any], startup_timeout: float,
                 info: ProcessInfo | None = None, wait: bool = True, address: str = "") -> None:  # fmt: skip
        self._portal = portal = target.loop.get()
        self.address = address  # where an HTTP server should answer, for the message when none does
        self._make_transport = make_transport
        self._era = target.era
        self._mode = target.era.mode()
        self.timeout = target.timeout
        self.info = info
        self.broken: str | None = None
        # Where a case recording its messages wants them (D-CNF-064); the streams are tapped
        # only on a connection made while --trace is on.
        self.tap: Callable[[str, Any], None] | None = None
        self.tapped = recording.enabled()
        self._dropped = target.dropped
        self._stop: anyio.Event | None = None
        self._client: Client | None = None
        self._ready = threading.Event()  # set once connected, or once the attempt is over
        self._failure: Exception | None = None
        self._loop: asyncio.AbstractEventLoop = portal.call(asyncio.get_running_loop)
        self._holder = portal.start_task_soon(self._hold, startup_timeout)
        self._holder.add_done_callback(lambda _: self._ready.set())
        if wait:
            self.wait()

    def wait(self) -> Connection:
        self._ready.wait()
        if self._client is None:
            if self._failure is None:
                exc = self._holder.exception() if not self._holder.cancelled() else None
                self._failure = self._startup_error(exc or RuntimeError("the connection was cancelled"))
            raise self._failure
        return self

    async def _hold(self, startup_timeout: float) -> None:
        self._stop = anyio.Event()
        # One scope around the whole connection, its deadline lifted once the server
        # answered: the Client's task groups must nest inside it, not straddle it.
        with anyio.CancelScope(deadline=anyio.current_time() + startup_timeout) as scope:
            transport = self._make_transport()
            async with Client(
                tapped(transport, lambda: self.tap) if self.tapped else transport,
                mode=self._mode,
                cache=None,  # tools/call is not cacheable; nothing to gain from a cache
                client_info=types.Implementation(name="intentref-conformance", version="0.1.0"),
            ) as client:
                await client.list_tools()  # a real round trip: the server is up and serving
                scope.deadline = math.inf
                self._era.learn(client.protocol_version)
                self._client = client
                self._ready.set()
                await self._stop.wait()
        if scope.cancelled_caught and self._client is None:
            raise TimeoutError("the server did not answer in time")

    def _startup_error(self, exc: BaseException) -> Exception:
        root = _root(exc)
        if isinstance(root, MCPError) and root.code not in _TRANSPORT_FAILURES:
            # The server is up and answers, but not in this era (D-CNF-052): no case can run.
            return self._era.refused(f"JSON-RPC error {root.code} ({root.message})")
        if isinstance(root, pydantic.ValidationError) and self._era.asked != "auto":
            # It answered, with a result this era does not know (a handshake-era tools/list
            # lacks the 2026-07-28 members): the same refusal in other words (D-CNF-052).
            missing = sorted({str(e["loc"][0]) for e in root.errors() if e.get("type") == "missing" and e.get("loc")})
            said = f"a {root.title} without {', '.join(missing)}" if missing else f"a {root.title} this era does not read"
            return self._era.refused(said)
        if self.info is None:
            if isinstance(root, httpx2.ConnectError):  # nothing listens there: no case can run
                return TargetCannotStart(f"nothing answers at {self.address or 'the server address'} ({_describe(exc)})")
            return RuntimeError(f"could not connect: {_describe(exc)}")
        if self.info.pid is None:
            if isinstance(root, OSError):  # the process was never created: the command cannot run at all
                return TargetCannotStart(f"cannot run {self.info.argv[0]!r}: {root.strerror or root}")
            return RuntimeError(f"the server did not start ({_describe(exc)}): {self.info.hint()}")
        if self._exited_within(PROCESS_REAP_WAIT):
            # Whatever its status and stderr: the server would not serve this configuration
            # (D-CNF-051); the runner decides what that means for the case.
            return ServerExited(f"the server exited before answering ({self.info.hint()})")
        return RuntimeError(f"the server did not start ({_describe(exc)}): {self.info.hint()}")

    def call(self, tool: str, arguments: Any) -> Reply:
        if self.broken is not None:
            raise RuntimeError(f"the connection is broken: {self.broken}")
        if not isinstance(arguments, dict):
            # tools/call carries its arguments as an object; a request that is not one can be
            # put to a Bridge directly, never through MCP.
            raise TargetUnsupported(f"MCP tool arguments are an object, and this request is a {type(arguments).__name__}")
        lone = has_lone_surrogate(arguments)
        if lone and self._dropped.lone_surrogates is not None:
            # D-CNF-053: this server already left such a request unanswered; one wait per target is enough.
            raise RequestDropped(f"{tool} left unanswered: {self._dropped.lone_surrogates}")
        try:
            # Straight onto the loop: a blocking portal's call costs twice as much per hop,
            # and a suite makes thousands of them.
            # A request holding a lone surrogate gets a short wait: some JSON-RPC layers drop one
            # unanswered (D-CNF-053), and every other answer comes in milliseconds.
            wait = min(self.timeout, LONE_SURROGATE_WAIT) if lone else self.timeout
            result = asyncio.run_coroutine_threadsafe(self._call(tool, arguments, wait), self._loop).result()
        except MCPError as exc:
            if exc.code == types.PARSE_ERROR and lone:
                # The server's JSON-RPC layer refused the escape before any tool ran (the
                # reference's handshake-era HTTP does, D-MCP-008): the question cannot be
                # asked over this transport, and the connection goes on (D-CNF-005).
                raise TargetUnsupported(
                    f"the server's JSON-RPC layer refused a lone-surrogate escape ({exc.message})"
                ) from None
            if exc.code not in _TRANSPORT_FAILURES:
                # An error response to this request: the protocol layer refused the call
                # and the connection goes on (seed 000 allows such a throw).
                raise ProtocolRefusal(f"a JSON-RPC error {exc.code}: {exc.message}"[:500], exc.code) from None
            raise self._broke(tool, exc) from None
        except TimeoutError:
            raise self._unanswered(tool, lone, wait) from None
        except Exception as exc:  # a closed connection, a malformed answer
            raise self._broke(tool, exc) from None
        reply = reply_of(result)
        if result.is_error and not is_bridge_reply(reply.value):
            # An SDK's own refusal (an input-schema check, say) dressed as a tool result.
            shown = (reply.text or "no text content").replace("\n", " ")
            raise ProtocolRefusal(f"an isError tool result that is not a BridgeReply: {shown}"[:500])
        return reply

    def _unanswered(self, tool: str, lone: bool, waited: float) -> RuntimeError:
        """A request not answered in time: a dead or stuck server, or one that dropped it (D-CNF-053)."""
        try:
            asyncio.run_coroutine_threadsafe(self._alive(), self._loop).result()
        except Exception:
            return self._broke(tool, TimeoutError())
        cause = f"the server answered tools/list at once but not this {tool} within {waited:g} s"
        if lone:
            cause += ("; the request holds a lone surrogate (an escape like \\ud800), which some JSON-RPC layers "
                      "drop without an answer (D-CNF-053)")  # fmt: skip
            self._dropped.lone_surrogates = cause
        return RequestDropped(f"{tool} left unanswered: {cause}")

    async def _alive(self) -> None:
        assert self._client is not None
        with anyio.fail_after(ALIVE_CHECK_TIMEOUT):
            await self._client.session.send_request(types.ListToolsRequest(), types.ListToolsResult)

    def _broke(self, tool: str, exc: BaseException) -> RuntimeError:
        self.broken = _describe(exc)
        if self.info is None:
            return RuntimeError(f"{tool} failed: {self.broken}")
        if not isinstance(exc, TimeoutError):
            self._exited_within(1.0)  # a closed connection is usually a server that exited: say how
        return RuntimeError(f"{tool} failed: {self.broken} ({self.info.hint()})")

    def _exited_within(self, seconds: float) -> bool:
        """Whether the server process has exited, waiting up to ``seconds`` for its transport to reap it."""
        assert self.info is not None
        deadline = time.monotonic() + seconds
        while self.info.returncode is None and time.monotonic() < deadline:
            time.sleep(0.01)  # the transport records the status once the process is reaped
        return self.info.returncode is not None

    async def _call(self, tool: str, arguments: Any, wait: float) -> types.CallToolResult:
        assert self._client is not None
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=tool, arguments=arguments))
        with anyio.fail_after(wait):
            # Not Client.call_tool: that validates structuredContent against the declared
            # outputSchema and raises; the suite's matchers judge the reply instead (D-CNF-005).
            return await self._client.session.send_request(request, types.CallToolResult)

    def close(self) -> None:
        self._ready.wait()  # a connection still starting is closed once it has started (or failed)
        stop, self._stop = self._stop, None
        if stop is None or self._client is None:
            return
        with contextlib.suppress(Exception):
            self._portal.call(stop.set)
            self._holder.result(timeout=3 * CLOSE_GRACE + 5)


@dataclass
class DroppedRequests:
    """What a target learnt of requests its server leaves unanswered (D-CNF-053), shared by its connections."""

    lone_surrogates: str | None = None


class EraChoice:
    """The MCP era a target speaks: pinned by the user, or negotiated once by its first connection (D-CNF-052)."""

    def __init__(self, era: str) -> None:
        if era not in ERAS:
            raise ValueError(f"era must be one of {', '.join(ERAS)}, got {era!r}")
        self.asked = era
        self.found: str | None = None if era == "auto" else era
        self._lock = threading.Lock()

    @property
    def era(self) -> str:
        """The era in force: ``2026`` or ``legacy``, or ``auto`` until a connection has negotiated it."""
        return self.found or self.asked

    def mode(self) -> str:
        return _CLIENT_MODES[self.era]

    def learn(self, version: str | None) -> None:
        with self._lock:
            if self.found is None:
                self.found = "legacy" if version in HANDSHAKE_PROTOCOL_VERSIONS else "2026"

    def refused(self, said: str) -> TargetCannotStart:
        """One line: the pinned era was answered with ``said``, and the option that helps."""
        if self.asked == "auto":
            return TargetCannotStart(f"the server answered neither server/discover nor initialize: {said}")
        named, other = _PINNED[self.asked]
        return EraRefused(f"the server answered {named} with {said}: it may speak only {_PINNED[other][0]}",
                          f"run with --era {other}, or --era auto to negotiate")  # fmt: skip


# JSON-RPC error codes that say the connection failed, not that the server refused the call.
_TRANSPORT_FAILURES: Final = frozenset({types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT})



def _root(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (the SDK's task groups wrap what went wrong)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    if isinstance(exc, TimeoutError):
        return "no answer within the timeout"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class ConnectionSession(CallSession):
    """A session on one connection of a run; the run decides what ``close`` and ``release`` do.

    It remembers the jobs its tasks named and no result has ended: when the run keeps the
    connection for another session, those jobs are cancelled first (a terminal job only
    repeats its reply), and a cancel that does not end its job is noted in the run's
    ``left_behind`` (D-CNF-002).
    """

    def __init__(self, run: ConnectionRun, connection: Connection) -> None:
        self._run = run
        self.connection = connection
        self._jobs: dict[str, None] = {}  # insertion-ordered set
        self._done = False

    def _call(self, op: str, request: Any) -> Reply:
        reply = self.connection.call(TOOL_OF_OP[op], request)
        value = reply.value
        if isinstance(value, dict) and value.get("kind") == "task" and isinstance(value.get("jobId"), str):
            self._jobs[value["jobId"]] = None
        elif op == "accept" and isinstance(value, dict) and value.get("kind") == "result" and isinstance(request, dict):
            # A result ends its job (seed 000 #回复类型): nothing is left to cancel.  An error
            # may or may not end it (a refused candidate keeps the step), so those stay listed.
            self._jobs.pop(request.get("jobId"), None)  # type: ignore[arg-type]
        return reply

    def record_into(self, tap: Callable[[str, Any], None] | None) -> bool:
        if not self.connection.tapped:
            return False
        self.connection.tap = tap
        return True

    def end_jobs(self) -> list[str]:
        """Cancel every job this session saw; what did not end, in words."""
        jobs, self._jobs = list(self._jobs), {}
        problems = []
        for job in jobs:
            try:
                value = self.connection.call(CANCEL_TOOL, {"jobId": job}).value
            except Exception as exc:
                return [f"cancelling job {job} failed: {exc}"]
            if not (is_bridge_reply(value) and value["kind"] in ("error", "result")):
                problems.append(f"cancelling job {job} did not end it: {value!r:.200}")
        return problems

    def release(self) -> None:
        self._end(closed=False)

    def close(self) -> None:
        self._end(closed=True)

    def _end(self, closed: bool) -> None:
        if not self._done:
            self._done = True
            self._run.released(self, closed)


class ConnectionRun(Run):
    """A run whose sessions are connections it makes (``_new``) and may keep for the next case."""

    def __init__(self) -> None:
        self._idle: list[Connection] = []
        self._busy: list[Connection] = []
        self._closed_this_case: list[Connection] = []
        self._left: list[str] = []
        self._lock = threading.Lock()

    @abc.abstractmethod
    def _new(self) -> Connection: ...

    def _keeps(self, connection: Connection, closed: bool) -> bool:
        """Whether a connection a session is done with stays for the next session."""
        return connection.broken is None

    def connect(self) -> Session:
        with self._lock:
            while self._idle and self._idle[-1].broken is not None:
                self._idle.pop().close()
            connection = self._idle.pop() if self._idle else None
        if connection is None:
            connection = self._new()
        with self._lock:
            self._busy.append(connection)
        return ConnectionSession(self, connection)

    def released(self, session: ConnectionSession, closed: bool) -> None:
        connection = session.connection
        with self._lock:
            if connection in self._busy:
                self._busy.remove(connection)
        keep = self._keeps(connection, closed)
        if keep:
            # Handed to another session: nothing of this one's may stay active on it.
            problems = session.end_jobs()
            if problems or connection.broken is not None:
                self._left.extend(problems or [f"the connection broke: {connection.broken}"])
                keep = False
        with self._lock:
            if keep and closed:
                self._closed_this_case.append(connection)  # not this case's again: it was "closed"
            elif keep:
                self._idle.append(connection)
        if not keep:
            connection.close()

    def left_behind(self) -> list[str]:
        return list(self._left)

    def new_case(self) -> None:
        with self._lock:
            self._idle.extend(self._closed_this_case)
            self._closed_this_case = []
            self._left = []

    def close(self) -> None:
        with self._lock:
            every = [*self._idle, *self._busy, *self._closed_this_case]
            self._idle, self._busy, self._closed_this_case = [], [], []
        for connection in every:
            connection.close()


# --------------------------------------------------------------------------- the targets' common part


class McpTarget(Target):
    """What the MCP targets share: an era, a timeout, the event loop of their connections, and what
    they learnt of requests their server leaves unanswered (D-CNF-053)."""

    transport = "mcp"

    def __init__(self, era: str, timeout: float) -> None:
        self.era = EraChoice(era)
        self.timeout = timeout
        self.dropped = DroppedRequests()
        self.loop = EventLoop()

    def era_in_force(self) -> str:
        return self.era.era

    def close(self) -> None:
        self.loop.close()


class EventLoop:
    """One background event loop per target, started on first use."""

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._portal: BlockingPortal | None = None
        self._lock = threading.Lock()

    def get(self) -> BlockingPortal:
        with self._lock:
            if self._portal is None:
                self._portal = self._stack.enter_context(start_blocking_portal(backend="asyncio"))
            return self._portal

    def close(self) -> None:
        with self._lock:
            portal, self._portal = self._portal, None
            if portal is not None:
                # Cancel whatever a caller left open (a run never closed): a plain exit would
                # wait for those connections forever.  Their transports still stop their servers.
                with contextlib.suppress(RuntimeError):
                    portal.call(portal.stop, True)
            self._stack.close()
