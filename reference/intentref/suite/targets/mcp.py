"""MCP targets: a server spawned over stdio, or one listening on streamable HTTP.

Both drive the server through the MCP SDK's own ``Client`` on an event loop in a
background thread (an anyio blocking portal), so the synchronous runner can call them.

Over stdio one process is one connection is one Bridge session (D-MCP-002), which
shapes everything here (D-CNF-001..004):

* a run is a configuration; its connections are server processes of that configuration,
  kept while the run lasts: a case's session hands its connection back when the case is
  over (the runner has ended its jobs), and the next case takes it (D-CNF-002);
* a case's further connections (a second session, or a session reopened after ``close``)
  are further processes of the same configuration: separate Bridges, so the case is
  unsupported when it also sets Bridge options (capacity is Bridge-wide).  A connection a
  case closed is not handed to that case again: a reopened session is another Bridge, as a
  new process would be;
* a configuration fault is an exit before answering, whatever the status and stderr say:
  the runner judges a configuration case by that alone (D-CNF-051).

The era (``2026`` for 2026-07-28, ``legacy`` for the initialize handshake) may be ``auto``:
the first connection negotiates it (``server/discover``, falling back to ``initialize``)
and every later one uses what it found (D-CNF-052).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

import anyio
import httpx2
import mcp_types as types
import pydantic
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from intentref.core.limits import has_lone_surrogate
from intentref.mcp.replies import is_bridge_reply
from intentref.suite.execution.runner import OWN_RUNS_AT_ONCE
from intentref.suite.targets.base import (
    REFERENCE_CAPABILITIES,
    CallSession,
    PlannedRun,
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
from intentref.suite.targets.harness import dumps_wire
from intentref.suite.targets.transport import (
    CLOSE_GRACE,
    NODELAY,
    ForkedProcess,
    ForkedServer,
    HttpConnections,
    ProcessInfo,
    SpawnedProcess,
    WireHttpClient,
    Zygote,
    probe_connections,
    stdio_transport,
    tls_context,
)

DEFAULT_TIMEOUT: Final = 10.0
# Servers of upcoming runs of their own started ahead (StdioTarget.expect_runs): one for each
# run the worker has open at once, and one more, so none waits for its server to start.
PREFETCH: Final = OWN_RUNS_AT_ONCE + 1
# Long-lived runs of an HTTP target serving cases side by side in one worker (D-CNF-054): one per
# thread a worker has (its long-lived one and OWN_RUNS_AT_ONCE beside it, which take long-lived
# units once no run of its own waits: over HTTP none does, a case with a Bridge of its own is
# unsupported there).
HTTP_LANES: Final = OWN_RUNS_AT_ONCE + 1
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
PLACEHOLDERS: Final = ("config", "maxJobs", "maxReplayEntries", "maxReplayBytes", "jobTtlMs", "replayTtlMs")
# The bundled CLI: each option flag only when the run sets that option.
REFERENCE_ARGS: Final = (
    "--config {config} [--max-jobs {maxJobs}] [--max-replay-entries {maxReplayEntries}]"
    " [--max-replay-bytes {maxReplayBytes}] [--job-ttl-ms {jobTtlMs}] [--replay-ttl-ms {replayTtlMs}]"
)
_PLACEHOLDER: Final = re.compile(r"\{([A-Za-z]+)\}")


def reference_program() -> list[str]:
    """The installed ``intent-runtime-mcp`` next to this interpreter, or the module form."""
    script = Path(sys.executable).with_name("intent-runtime-mcp")
    return [str(script)] if script.exists() else [sys.executable, "-m", "intentref.mcp.cli"]


# --------------------------------------------------------------------------- command templates


@dataclass(frozen=True)
class CommandTemplate:
    """A command line with ``{placeholders}``; ``[ ... ]`` groups are dropped when their option is unset.

    ``intent-runtime-mcp --config {config} [--max-jobs {maxJobs}]`` runs with ``--max-jobs 3``
    for a case setting ``maxJobs: 3`` and without the flag otherwise.  An option with no
    placeholder anywhere in the template cannot be passed, so such a run is unsupported.
    """

    prefix: tuple[str, ...]  # literal tokens (a program and its own arguments)
    parts: tuple[tuple[str, ...], ...]  # each a group of tokens; single-token groups are not optional
    optional: tuple[bool, ...]

    @classmethod
    def parse(cls, text: str, prefix: Sequence[str] = ()) -> CommandTemplate:
        parts: list[tuple[str, ...]] = []
        optional: list[bool] = []
        group: list[str] | None = None
        for token in shlex.split(text):
            opens, closes = group is None and token.startswith("["), token.endswith("]")
            if opens:
                group, token = [], token[1:]
            if group is not None:
                if closes:
                    token = token[:-1]
                if token:
                    group.append(token)
                if closes:
                    parts.append(tuple(group))
                    optional.append(True)
                    group = None
            else:
                parts.append((token,))
                optional.append(False)
        if group is not None:
            raise ValueError(f"unclosed [ group in command template {text!r}")
        template = cls(tuple(prefix), tuple(parts), tuple(optional))
        unknown = template.placeholders() - set(PLACEHOLDERS)
        if unknown:
            raise ValueError(f"unknown placeholder(s) {sorted(unknown)} in {text!r}; known: {list(PLACEHOLDERS)}")
        if not template.prefix and not template.parts:
            raise ValueError("the command template is empty")
        return template

    def placeholders(self) -> set[str]:
        return {name for part in self.parts for token in part for name in _PLACEHOLDER.findall(token)}

    def unsupported(self, options: dict[str, Any]) -> str | None:
        names = self.placeholders()
        missing = [option for option in options if option not in names]
        if missing:
            return f"the server command has no placeholder for Bridge option(s) {', '.join(missing)}"
        required = {n for part, opt in zip(self.parts, self.optional, strict=True) if not opt for t in part
                    for n in _PLACEHOLDER.findall(t)} - {"config"}  # fmt: skip
        if required - set(options):
            return f"the server command always passes {', '.join(sorted(required - set(options)))}, which this run does not set"
        return None

    def render(self, config: str, options: dict[str, Any]) -> list[str]:
        values = {"config": config, **{k: v if isinstance(v, str) else json.dumps(v) for k, v in options.items()}}
        argv = list(self.prefix)
        for part, opt in zip(self.parts, self.optional, strict=True):
            wanted = {n for token in part for n in _PLACEHOLDER.findall(token)}
            if opt and not wanted <= values.keys():
                continue
            argv.extend(_PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), token) for token in part)
        return argv

    def display(self) -> str:
        shown = [shlex.quote(t) if "\n" not in t else "<launcher>" for t in self.prefix]
        for part, opt in zip(self.parts, self.optional, strict=True):
            text = " ".join(shlex.quote(t) if not _PLACEHOLDER.search(t) else t for t in part)
            shown.append(f"[{text}]" if opt else text)
        return " ".join(shown)


# --------------------------------------------------------------------------- case analysis


def connections_of(case: dict[str, Any]) -> int:
    """How many connections the case opens: a session name opens one on first use and after ``close``."""
    open_names: set[str] = set()
    count = 0
    for step in case["steps"]:
        name = step.get("session", "main")
        if step["op"] == "close":
            open_names.discard(name)
        elif step["op"] != "sleep" and name not in open_names:
            open_names.add(name)
            count += 1
    return count


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
    why it did not), so a target can start connections ahead of need (prefetch).  ``era``
    is the target's ``EraChoice``: it gives the Client mode and learns what ``auto`` found.
    """

    def __init__(self, portal: BlockingPortal, make_transport: Callable[[], Any], era: EraChoice, timeout: float,
                 startup_timeout: float, info: ProcessInfo | None = None, wait: bool = True,
                 address: str = "", dropped: DroppedRequests | None = None) -> None:  # fmt: skip
        self._portal = portal
        self.address = address  # where an HTTP server should answer, for the message when none does
        self._make_transport = make_transport
        self._era = era
        self._mode = era.mode()
        self.timeout = timeout
        self.info = info
        self.broken: str | None = None
        self._dropped = dropped if dropped is not None else DroppedRequests()
        self._stop: anyio.Event | None = None
        self._client: Client | None = None
        self._answered_first = False  # the server answered one request (not: it refused our era)
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
            async with Client(
                self._make_transport(),
                mode=self._mode,
                cache=None,  # tools/call is not cacheable; nothing to gain from a cache
                client_info=types.Implementation(name="intentref-conformance", version="0.1.0"),
            ) as client:
                self._answered_first = self._mode != "2026-07-28"  # a handshake was answered
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
            return TargetCannotStart(self._era.refused(f"JSON-RPC error {root.code} ({root.message})"))
        if isinstance(root, pydantic.ValidationError) and self._era.asked != "auto":
            # It answered, with a result this era does not know (a handshake-era tools/list
            # lacks the 2026-07-28 members): the same refusal in other words (D-CNF-052).
            missing = sorted({str(e["loc"][0]) for e in root.errors() if e.get("type") == "missing" and e.get("loc")})
            said = f"a {root.title} without {', '.join(missing)}" if missing else f"a {root.title} this era does not read"
            return TargetCannotStart(self._era.refused(said))
        if self.info is None:
            if isinstance(root, httpx2.ConnectError):  # nothing listens there: no case can run
                return TargetCannotStart(f"nothing answers at {self.address or 'the server address'} ({_describe(exc)})")
            return RuntimeError(f"could not connect: {_describe(exc)}")
        if self.info.pid is None:
            if isinstance(root, OSError):  # the process was never created: the command cannot run at all
                return TargetCannotStart(f"cannot run {self.info.argv[0]!r}: {root.strerror or root}")
            return RuntimeError(f"the server did not start ({_describe(exc)}): {self.info.hint()}")
        deadline = time.monotonic() + PROCESS_REAP_WAIT
        while self.info.returncode is None and time.monotonic() < deadline:
            time.sleep(0.01)  # the transport records the status once the process is reaped
        if self.info.returncode is not None:
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
        deadline = time.monotonic() + 1.0
        while self.info.returncode is None and time.monotonic() < deadline and not isinstance(exc, TimeoutError):
            time.sleep(0.01)  # a closed connection is usually a server that exited: say how
        return RuntimeError(f"{tool} failed: {self.broken} ({self.info.hint()})")

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
        self.version: str | None = None
        self._lock = threading.Lock()

    @property
    def era(self) -> str:
        """The era in force: ``2026`` or ``legacy``, or ``auto`` until a connection has negotiated it."""
        return self.found or self.asked

    def mode(self) -> str:
        return _CLIENT_MODES[self.era]

    def learn(self, version: str | None) -> None:
        with self._lock:
            self.version = version
            if self.found is None:
                self.found = "legacy" if version in HANDSHAKE_PROTOCOL_VERSIONS else "2026"

    def refused(self, said: str) -> str:
        """One line: the pinned era was answered with ``said``, and the option that helps."""
        if self.asked == "2026":
            return (f"the server answered the 2026-07-28 era with {said}: it may speak only the initialize "
                    "handshake; run with --era legacy, or --era auto to negotiate")  # fmt: skip
        if self.asked == "legacy":
            return (f"the server answered the initialize handshake with {said}: it may speak only the 2026-07-28 "
                    "era; run with --era 2026, or --era auto to negotiate")  # fmt: skip
        return f"the server answered neither server/discover nor initialize: {said}"

    def describe(self) -> str:
        if self.asked == "auto":
            return f"auto: {self.found} ({self.version})" if self.found else "auto"
        return self.asked


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


_TOOLS: Final = {"prepare": "intent_prepare", "accept": "intent_accept", "cancel": "intent_cancel"}


class _ConnectionSession(CallSession):
    """A session on one connection of a run; the run decides what ``close`` and ``release`` do.

    It remembers the jobs its tasks named and no result has ended: when the run keeps the
    connection for another session, those jobs are cancelled first (a terminal job only
    repeats its reply), and a
    cancel that does not end its job is noted in the run's ``left_behind`` (D-CNF-002).
    """

    def __init__(self, run: _ConnectionRun, connection: Connection) -> None:
        self._run = run
        self.connection = connection
        self._jobs: dict[str, None] = {}  # insertion-ordered set
        self._done = False

    def _call(self, op: str, request: Any) -> Reply:
        reply = self.connection.call(_TOOLS[op], request)
        value = reply.value
        if isinstance(value, dict) and value.get("kind") == "task" and isinstance(value.get("jobId"), str):
            self._jobs[value["jobId"]] = None
        elif op == "accept" and isinstance(value, dict) and value.get("kind") == "result" and isinstance(request, dict):
            # A result ends its job (seed 000 #回复类型): nothing is left to cancel.  An error
            # may or may not end it (a refused candidate keeps the step), so those stay listed.
            self._jobs.pop(request.get("jobId"), None)  # type: ignore[arg-type]
        return reply

    def end_jobs(self) -> list[str]:
        """Cancel every job this session saw; what did not end, in words."""
        jobs, self._jobs = list(self._jobs), {}
        problems = []
        for job in jobs:
            try:
                value = self.connection.call("intent_cancel", {"jobId": job}).value
            except Exception as exc:
                return [f"cancelling job {job} failed: {exc}"]
            if not (is_bridge_reply(value) and value["kind"] in ("error", "result")):
                problems.append(f"cancelling job {job} did not end it: {value!r:.200}")
        return problems

    def release(self) -> None:
        if not self._done:
            self._done = True
            self._run.released(self, closed=False)

    def close(self) -> None:
        if not self._done:
            self._done = True
            self._run.released(self, closed=True)


class _ConnectionRun(Run):
    """A run whose sessions are connections it makes (``_new``) and may keep for the next case."""

    def __init__(self) -> None:
        self._idle: list[Connection] = []
        self._busy: list[Connection] = []
        self._closed_this_case: list[Connection] = []
        self._left: list[str] = []
        self._lock = threading.Lock()

    def _new(self) -> Connection:
        raise NotImplementedError

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
        return _ConnectionSession(self, connection)

    def released(self, session: _ConnectionSession, closed: bool) -> None:
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

    def _all(self) -> list[Connection]:
        with self._lock:
            every = [*self._idle, *self._busy, *self._closed_this_case]
            self._idle, self._busy, self._closed_this_case = [], [], []
        return every

    def close(self) -> None:
        for connection in self._all():
            connection.close()


# --------------------------------------------------------------------------- the event loop


class _Portal:
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


# --------------------------------------------------------------------------- stdio


@dataclass(frozen=True)
class _Started:
    """A server started ahead for a planned run of its own (prefetch).

    A warm server is read by name (``key`` to find it, ``config`` and ``argv`` to open the
    run on it), never by position; frozen, since it is handed over whole or discarded whole.
    """

    key: str
    config: str  # the instances file written for it
    argv: list[str]
    connection: Connection


class StdioTarget(Target):
    """An MCP server spawned over stdio, driven by the SDK Client in one era.

    ``command`` is a template (see :class:`CommandTemplate`); ``"{config}"`` becomes the
    path of a ``{"instances": ...}`` file written for the run.
    """

    transport = "mcp"
    long_lived_runs = True  # a run is a process start: keep runs, merge configurations (D-CNF-050)

    def __init__(
        self,
        command: str | CommandTemplate,
        era: str = "auto",
        timeout: float = DEFAULT_TIMEOUT,
        name: str | None = None,
        env: dict[str, str] | None = None,
        _zygote: Zygote | None = None,
        _zygote_socket: str | None = None,
    ) -> None:
        self.era = EraChoice(era)
        self.template = command if isinstance(command, CommandTemplate) else CommandTemplate.parse(command)
        if "config" not in self.template.placeholders():
            raise ValueError("the server command must contain {config}, the path of the instances file")
        self.timeout = timeout
        self.startup_timeout = max(3 * timeout, 60.0)  # a cold start imports the whole SDK
        self.env = dict(os.environ) if env is None else env
        self._display = self.template.display()
        self.name = name or f"stdio: {self._display}"
        self._portal = _Portal()
        self._zygote = _zygote
        self._zygote_socket = _zygote_socket or (_zygote.socket if _zygote is not None else None)
        self._dir = tempfile.TemporaryDirectory(prefix="intentref-stdio-")
        self._runs = 0
        self.prefetch = PREFETCH
        self.dropped = DroppedRequests()
        self._lock = threading.Lock()  # open() is called from the runner's threads
        self._planned: collections.deque[tuple[str, dict[str, Any], dict[str, Any]]] = collections.deque()
        self._warm: collections.deque[_Started] = collections.deque()

    @classmethod
    def reference(cls, era: str = "auto", timeout: float = DEFAULT_TIMEOUT, fork: bool = True,
                  zygote_socket: str | None = None) -> StdioTarget:  # fmt: skip
        """The bundled ``intent-runtime-mcp``.

        ``fork`` (the default) forks each server process from a pre-imported zygote instead
        of starting the console script cold: same code, same pipes, a fraction of the
        start-up (D-CNF-006).  ``zygote_socket`` names a zygote another process started
        (the runner's workers share one); without it the target starts its own.
        """
        label = "forked" if fork else "cold start"
        if not fork:
            template = CommandTemplate.parse(REFERENCE_ARGS, prefix=reference_program())
            target = cls(template, era, timeout, name=f"reference over stdio ({label})")
        else:
            zygote = None if zygote_socket is not None else Zygote(max(3 * timeout, 60.0))
            template = CommandTemplate.parse(REFERENCE_ARGS)  # the console script's arguments
            target = cls(template, era, timeout, name=f"reference over stdio ({label})", _zygote=zygote,
                         _zygote_socket=zygote_socket)  # fmt: skip
        target.capabilities = REFERENCE_CAPABILITIES  # D-CNF-030: what the bundled CLI takes
        return target

    def era_in_force(self) -> str:
        return self.era.era

    def unsupported(self, bridge_options: dict[str, Any]) -> str | None:
        return self.template.unsupported(bridge_options)

    def unsupported_case(self, case: dict[str, Any]) -> str | None:
        if case.get("bridge") and connections_of(case) > 1:
            return ("needs two connections to one Bridge with these options; over stdio each connection "
                    "is its own server process (D-CNF-001)")  # fmt: skip
        return None

    def _write_config(self, instances: dict[str, Any]) -> str:
        with self._lock:
            self._runs += 1
            number = self._runs
        path = os.path.join(self._dir.name, f"run-{number}.json")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(dumps_wire({"instances": instances}))
        return path

    def spawn(self, argv: list[str], wait: bool = True) -> Connection:
        info = ProcessInfo(argv)
        socket_path, env = self._zygote_socket, self.env
        startup = self.startup_timeout

        async def start() -> Any:
            if socket_path is not None:
                return await ForkedProcess.start(socket_path, argv, startup)
            return await SpawnedProcess.start(argv, env)

        if self._zygote is not None:
            self._zygote.wait()
        return Connection(self._portal.get(), lambda: stdio_transport(info, start), self.era, self.timeout,
                          self.startup_timeout, info, wait=wait, dropped=self.dropped)  # fmt: skip

    # --- prefetch: the runner says which runs of their own come next ---------------------

    def expect_runs(self, runs: list[PlannedRun]) -> None:
        """The runs (instances, options) that ``open`` will be asked for, in order.

        Their servers are started ``PREFETCH`` ahead, so a case with its own configuration
        waits for its process only when start-ups are slower than the cases themselves.
        """
        with self._lock:
            self._discard_warm()
            self._planned = collections.deque((_run_key(i, o), i, o) for i, o in runs if not self.unsupported(o))
        self._top_up()

    def _top_up(self) -> None:
        while True:
            with self._lock:
                if not self._planned or len(self._warm) >= self.prefetch:
                    return
                key, instances, options = self._planned.popleft()
            config = self._write_config(instances)
            argv = self.template.render(config, options)
            started = _Started(key, config, argv, self.spawn(argv, wait=False))
            with self._lock:
                self._warm.append(started)

    def _take_warm(self, key: str) -> _Started | None:
        # The first started server of this configuration, wherever it stands: parallel
        # cases open their runs in nearly, not exactly, the planned order.
        with self._lock:
            found = next((started for started in self._warm if started.key == key), None)
            if found is not None:
                self._warm.remove(found)
        if found is not None:
            self._top_up()
        return found

    def _discard_warm(self) -> None:
        while self._warm:
            started = self._warm.popleft()
            started.connection.close()
            with contextlib.suppress(OSError):
                os.unlink(started.config)

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        reason = self.unsupported(bridge_options)
        if reason is not None:
            raise TargetUnsupported(reason)
        warm = self._take_warm(_run_key(instances, bridge_options)) if self._warm else None
        if warm is not None:
            config, argv, connection = warm.config, warm.argv, warm.connection
        else:
            config = self._write_config(instances)
            argv = self.template.render(config, bridge_options)
            connection = None
        try:
            return _StdioRun(self, argv, config, connection)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(config)
            raise

    def close(self) -> None:
        with self._lock:
            self._planned.clear()
            self._discard_warm()
        self._portal.close()
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None
        self._dir.cleanup()


def _run_key(instances: dict[str, Any], options: dict[str, Any]) -> str:
    return dumps_wire([instances, options])


class _StdioRun(_ConnectionRun):
    """One configuration: its connections are server processes, kept until the run closes."""

    def __init__(self, target: StdioTarget, argv: list[str], config: str, started: Connection | None = None) -> None:
        super().__init__()
        self._target = target
        self._argv = argv
        self._config = config
        # Waited for here, so a refused configuration shows at open.
        self._idle.append(started.wait() if started is not None else target.spawn(argv))

    def _new(self) -> Connection:
        return self._target.spawn(self._argv)  # a further connection: a further process (D-CNF-001)

    def close(self) -> None:
        super().close()
        with contextlib.suppress(OSError):
            os.unlink(self._config)


# --------------------------------------------------------------------------- streamable HTTP


class HttpTarget(Target):
    """A server already listening on streamable HTTP; its configuration is its own.

    The server must serve ``conformance/instances.json`` (``http-reference`` starts the
    bundled one so).  Handshake era: each session is its own MCP session.  2026-07-28 era:
    requests carry no session, one Bridge session owns every job (D-MCP-003), so cases
    needing several connections or a close are unsupported (D-CNF-004).  The runner's
    workers each open their own sessions, so cases run side by side.
    """

    transport = "mcp"
    # Its instances are the server's own: the CLI checks it serves the suite's first (D-CNF-013).
    configured_elsewhere = True
    # A case over streamable HTTP spends most of its time waiting on request round trips, so
    # a worker keeps this many long-lived runs (sessions of their own) serving cases side by side.
    long_lived_lanes = HTTP_LANES

    def __init__(self, url: str, era: str = "auto", timeout: float = DEFAULT_TIMEOUT, name: str | None = None) -> None:
        self.era = EraChoice(era)
        self.url = url
        self.timeout = timeout
        self.name = name or f"http: {url}"
        self.dropped = DroppedRequests()
        self._portal = _Portal()
        self._connections: HttpConnections | None = None
        self._probe_lock = threading.Lock()

    def connections(self) -> HttpConnections:
        """Kept alive or one per request: probed once, with the first connection (D-CNF-056)."""
        with self._probe_lock:
            if self._connections is None:
                self._connections = probe_connections(self.url, self.timeout)
            return self._connections

    def findings(self) -> list[str]:
        finding = self.connections().finding()
        return [] if finding is None else [finding]

    def negotiate(self) -> str:
        """The era in force, negotiated now with one connection when it is ``auto``."""
        if self.era.found is None:
            self.connection().close()
        return self.era.era

    def era_in_force(self) -> str:
        return self.era.era

    @property
    def separate_sessions(self) -> bool:
        """The 2026-07-28 era over HTTP has no session: every connection shares one (D-MCP-003)."""
        return self.negotiate() != "2026"

    def unsupported(self, bridge_options: dict[str, Any]) -> str | None:
        if bridge_options:
            return "an HTTP server is already configured; Bridge options cannot be set per case"
        return None

    def unsupported_case(self, case: dict[str, Any]) -> str | None:
        if "setup" in case:
            return "an HTTP server is already configured; its instances cannot be replaced per case"
        if self.negotiate() == "2026" and (connections_of(case) > 1 or any(s["op"] == "close" for s in case["steps"])):
            return ("needs separate connections or a close; 2026-07-28 HTTP requests carry no session and "
                    "share one Bridge session (D-MCP-003, D-CNF-004)")  # fmt: skip
        return None

    def connection(self) -> Connection:
        connections = self.connections()

        def transport() -> Any:
            return _http_transport(self.url, self.timeout, connections)

        return Connection(self._portal.get(), transport, self.era, self.timeout, max(3 * self.timeout, 30.0),
                          address=self.url, dropped=self.dropped)  # fmt: skip

    def open(self, instances: dict[str, Any], bridge_options: dict[str, Any]) -> Run:
        if bridge_options:
            raise TargetUnsupported(self.unsupported(bridge_options) or "")
        return _HttpRun(self)

    def close(self) -> None:
        self._portal.close()


@contextlib.asynccontextmanager
async def _http_transport(url: str, timeout: float, connections: HttpConnections) -> AsyncIterator[Any]:
    transport = httpx2.AsyncHTTPTransport(verify=tls_context(), socket_options=NODELAY, limits=connections.limits())
    http = WireHttpClient(timeout=httpx2.Timeout(max(timeout, 30.0), read=300.0), transport=transport)
    async with http, streamable_http_client(url, http_client=http) as streams:
        yield streams


class _HttpRun(_ConnectionRun):
    """Handshake era: a connection is an MCP session, kept for the next case unless a case closed it.

    2026-07-28 era: a connection is a stateless client; every session of the run shares it.
    """

    def __init__(self, target: HttpTarget) -> None:
        super().__init__()
        self._target = target

    def _new(self) -> Connection:
        return self._target.connection()

    def _keeps(self, connection: Connection, closed: bool) -> bool:
        # A closed handshake-era session really ends (its Bridge session with it): another
        # session on the same server may see the difference.
        return connection.broken is None and not closed

    def connect(self) -> Session:
        if self._target.era.era == "2026":
            with self._lock:
                shared = self._idle[0] if self._idle and self._idle[0].broken is None else None
            if shared is None:
                shared = self._new()
                with self._lock:
                    for old in self._idle:
                        old.close()
                    self._idle = [shared]
            return _ConnectionSession(self, shared)
        return super().connect()

    def released(self, session: _ConnectionSession, closed: bool) -> None:
        if self._target.era.era == "2026":
            # The one stateless client stays (the era has no connection to close), so the
            # session's jobs are ended here, as on any connection kept for another session.
            problems = session.end_jobs()
            with self._lock:
                self._left.extend(problems)
            return
        super().released(session, closed)


class HttpReferenceTarget(HttpTarget):
    """The bundled server on streamable HTTP at 127.0.0.1 (an ephemeral port), serving the suite's instances.

    Each target starts its own server when its first run opens (each of the runner's workers
    is a target of its own), forked from the reference zygote when one is given (D-CNF-006).
    The reference speaks both eras, so ``auto`` is 2026-07-28 without asking.
    """

    def __init__(self, era: str = "auto", timeout: float = DEFAULT_TIMEOUT, zygote_socket: str | None = None,
                 instances: dict[str, Any] | None = None) -> None:  # fmt: skip
        super().__init__("", "2026" if era == "auto" else era, timeout, name="reference over HTTP")
        self.capabilities = REFERENCE_CAPABILITIES
        self._zygote_socket = zygote_socket
        self._instances = instances
        self._server: HttpReference | None = None
        self._server_lock = threading.Lock()

    def connection(self) -> Connection:
        with self._server_lock:
            if self._server is None:
                from intentref.suite.targets.base import load_instances

                instances = load_instances() if self._instances is None else self._instances
                self._server = HttpReference(instances, zygote_socket=self._zygote_socket)
                self.url = self._server.url
        return super().connection()

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._server is not None:
                self._server.close()
                self._server = None


class HttpReference:
    """The bundled server on streamable HTTP at 127.0.0.1 (an ephemeral port), serving ``instances``."""

    def __init__(self, instances: dict[str, Any], startup_timeout: float = 60.0, zygote_socket: str | None = None) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="intentref-http-")
        config = os.path.join(self._dir.name, "instances.json")
        with open(config, "w", encoding="utf-8") as handle:
            handle.write(dumps_wire({"instances": instances}))
        argv = ["--config", config, "--http", "127.0.0.1:0"]
        self._forked: ForkedServer | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        stderr: IO[bytes]
        if zygote_socket is not None:
            self._forked = ForkedServer(zygote_socket, argv, startup_timeout)
            stderr = self._forked.stderr
        else:
            self.proc = subprocess.Popen([*reference_program(), *argv], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
            assert self.proc.stderr is not None
            stderr = self.proc.stderr
        self._stderr: list[str] = []
        found = threading.Event()
        self.url = ""

        def drain() -> None:
            for raw in stderr:
                line = raw.decode("utf-8", "replace")
                self._stderr.append(line)
                # mcp_cli prints the bound endpoint on stderr once it serves.
                match = re.search(r"serving streamable HTTP at (http://\S+)", line)
                if match and not self.url:
                    self.url = match.group(1)
                    found.set()
            found.set()

        threading.Thread(target=drain, daemon=True, name="http reference stderr").start()
        if not found.wait(startup_timeout) or not self.url:
            self.close()
            raise RuntimeError(f"the reference HTTP server did not start: {''.join(self._stderr)[-2000:]}")

    def close(self) -> None:
        if self._forked is not None:
            self._forked.close()
        elif self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._dir.cleanup()
